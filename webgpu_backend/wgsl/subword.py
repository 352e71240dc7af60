"""Sub-word stores: an 8- or 16-bit value written into its bits of a 32-bit ``atomic<u32>`` word.

WGSL memory is 32-bit words, so a store of a byte or a half-word changes some bits of a word whose other bits
may be stored at the same time by another invocation (neighbouring elements) and whose own bits may be stored by
another invocation too (a data race: the contract still says each byte is one that some store, or the memory
before, could have left; docs/semantics.md). ``merge_bits`` makes the store one atomic step from the old word to
the new (a compare-exchange loop): the other bits are kept, and no invocation ever sees the word in a state no
store left. Two steps (``atomicAnd`` clearing the bits, then ``atomicOr`` setting them) did not: between them
another lane read the bits cleared (lavapipe, lanes of different workgroups storing and reading back the same
byte: a whole-suite run read 0 for 7), and stores of different values into the same byte left the OR of them
(lavapipe runs a workgroup's invocations as SIMD lanes, each atomic for all of them in turn: 0xff from eight
lanes storing ``1 << lane``, every time).

Every sub-word store of the backend goes through here: STG/STS/PoolStore (rules_memory, through the stage
shader's ``mem_merge``/``shm_merge``) and the cooperative kernels' f16/bf16 and i8 outputs.
"""

from __future__ import annotations

__all__ = ["merge_bits"]


def merge_bits(word: str, mask: str, bits: str) -> str:
    """One line of WGSL statements: the bits of ``word`` (an ``atomic<u32>`` reference, evaluated several times:
    no side effects) under ``mask`` := ``bits`` (already shifted and within ``mask``), in one atomic step. The
    statements declare ``old`` and ``swap``: put them in a block of their own (a function or a switch case).

    The first compare-exchange guesses the word is 0 (fresh memory) rather than reading it with ``atomicLoad``:
    a failed guess returns the word, so a store costs one or two atomic operations (as the two-step store cost
    two), and lavapipe compiles a shader of 64 unrolled byte stores in 0.75-1.1 s, as the two-step one (0.7-1.1 s;
    1.5-1.8 s with the load first; benchmarks/webgpu_subword_stores.py)."""
    return (f"var old = 0u; loop {{ let swap = atomicCompareExchangeWeak(&{word}, old, "
            f"(old & ~({mask})) | ({bits})); if (swap.exchanged) {{ break; }} old = swap.old_value; }}")
