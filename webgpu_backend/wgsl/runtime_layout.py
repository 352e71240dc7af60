"""The runtime interface every generated shader shares with the host: the per-dispatch ``launch``
record and the runtime storage buffer ``rt`` (``array<atomic<u32>>``).

``launch`` (one 256-byte slot per dispatch of a submission, bound at the slot's offset) is a
*read-only storage* binding, not a uniform: lavapipe specializes a shader on the values of the
uniforms its branches and loops test ("inlined uniforms"), which would compile a new variant
for every step and table size, and would turn ``zero`` into a constant the compiler folds::

    zero           always 0: ``opaque_f32`` XORs with it, so the compiler cannot fold constants
    budget         backward jumps a lane may take
    table_entries  entries of the device handle table
    step           this dispatch's position in the submission's sequence of steps
    expect         the resume point (+1) the previous step must have reached for this one to run
                   (0: the first stage of a launch, which always runs)
    lanes          lanes of the launch
    ...            the words the registered kernels declare (``Kernel.launch_fields``, e.g. the
                   arrays' byte offsets, the element count, the rt word of a result), in order of
                   registration, each name once
    resume         cooperative kernels only: the value (resume point + 1) the kernel records as
                   reached for its step

``rt`` words::

    TRAPS + k                      lowest global lane that trapped in step k (atomicMin; NO_TRAP: none)
    REACHED + k                    resume point + 1 where the lanes of step k suspended (0: all ended)
    UNIFORMS ...                   presets and the results of cooperative steps (uniform values)
    RESONANCE ...                  the ResAccum fixed-point sums (rules_atlas)
    TRAP_INFO + TRAP_WORDS * lane  the trap record of a lane that trapped: (instruction index << 4) |
                                   trap code, then its numbers (atlas_web.trap_report.TrapRecord):
                                   operand, handle, value (low, high word), extent, limit; from
                                   BLOCK_RECORDS_FROM_LANES lanes on one record per block instead
                                   (TRAP_INFO + TRAP_WORDS * block: the block's lowest trapping lane's)

A cooperative kernel that checks its arrays on the device (``Kernel.traps_on_device``: SparseGEMM's CSR) traps
with ``atomicMin(TRAPS + step, KERNEL_TRAP)`` and writes lane 0's record (no lane trapped before the step); the
host reports it with lane -1. A lane that traps does ``atomicMin(TRAPS + step, lane)`` and writes its own TRAP_INFO record; after
the submission the host takes the first step with a trap, its lane and then that lane's record, so
the report is the earliest trapping stage's lowest lane's first trap without any lock. A step
runs only when the step before it did not trap (``guard``): it reads that step's word, never
the word its own dispatch is writing, so every workgroup of a trapping stage runs it whole.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rules_atlas import RES_WORDS

__all__ = [
    "LAUNCH_SLOT_BYTES", "MAX_STEPS", "TRAPS", "REACHED", "NO_TRAP", "LANE_ENDED",
    "LANE_TRAPPED", "KERNEL_TRAP", "RuntimeLayout", "launch_fields", "declare_launch_fields", "launch_struct", "pack_launch",
    "GUARD_WGSL", "TRAP_WORDS", "BLOCK_RECORDS_FROM_LANES",
]

#: bytes of one dispatch's ``launch`` uniform slot (WebGPU's largest minUniformBufferOffsetAlignment)
LAUNCH_SLOT_BYTES = 256
#: dispatches (steps) one submission may hold
MAX_STEPS = 60
#: the fields of ``launch`` every shader has, before the kernels' own and last (all u32)
_COMMON_FIELDS = ("zero", "budget", "table_entries", "step", "expect", "lanes")
_LAST_FIELDS = ("resume",)
#: the fields the registered kernels declared, in order
_KERNEL_FIELDS: list[str] = []

TRAPS = 4
REACHED = TRAPS + MAX_STEPS
NO_TRAP = 0xFFFFFFFF
#: words of one lane's trap record: the code and instruction word, operand, handle, value low and high,
#: extent, limit
TRAP_WORDS = 7
#: what a segment function returns when the lane ended, or trapped (resume point ids are below)
LANE_ENDED = 0xFFFFFFFF
LANE_TRAPPED = 0xFFFFFFFE
#: the ``TRAPS + step`` word of a cooperative kernel's own trap (reported with lane -1)
KERNEL_TRAP = 0xFFFFFFFD



def declare_launch_fields(names) -> None:
    """Add the ``launch`` words a kernel reads (names already declared are shared). Raises ValueError,
    declaring nothing, when the record would not fit its slot."""
    new = [name for name in dict.fromkeys(names) if name not in launch_fields()]
    if 4 * (len(launch_fields()) + len(new)) > LAUNCH_SLOT_BYTES:
        raise ValueError(f"the launch record holds at most {LAUNCH_SLOT_BYTES // 4} words; "
                         f"{len(launch_fields())} are declared, {len(new)} more asked for")
    _KERNEL_FIELDS.extend(new)


def launch_fields() -> tuple[str, ...]:
    """The fields of ``launch``, in order (all u32)."""
    return _COMMON_FIELDS + tuple(_KERNEL_FIELDS) + _LAST_FIELDS


def launch_struct() -> str:
    """The WGSL ``struct Launch`` every shader declares."""
    return "struct Launch {\n" + "".join(f"    {name}: u32,\n" for name in launch_fields()) + "}"


#: whether this dispatch's step runs: first in its submission (the host checked), or the step
#: before it neither trapped nor failed to reach it (``expect`` 0: it need not reach it)
GUARD_WGSL = (f"(launch.step == 0u || (atomicLoad(&rt[TRAPS + launch.step - 1u]) == 0x{NO_TRAP:08x}u && "
              "(launch.expect == 0u || atomicLoad(&rt[REACHED + launch.step - 1u]) == launch.expect)))")


def pack_launch(**fields: int) -> bytes:
    """The bytes of one ``launch`` slot (fields not given are 0), padded to LAUNCH_SLOT_BYTES."""
    names = launch_fields()
    unknown = set(fields).difference(names)
    if unknown:
        raise KeyError(f"unknown launch fields {sorted(unknown)}")
    words = b"".join((fields.get(name, 0) & 0xFFFFFFFF).to_bytes(4, "little") for name in names)
    return words.ljust(LAUNCH_SLOT_BYTES, b"\0")


#: from this many lanes on a launch keeps one trap record per block, not per lane (28 bytes a lane would pass
#: a 128 MiB binding at 4.8M lanes): the block's lowest trapping lane writes it after a barrier
BLOCK_RECORDS_FROM_LANES = 1 << 20


@dataclass(frozen=True)
class RuntimeLayout:
    """Word offsets of the regions of ``rt`` for a program with ``uniform_words`` uniform words and a
    launch of ``lanes`` lanes in blocks of ``block_lanes`` (the trap-info region has TRAP_WORDS words per
    record slot when the program may trap: one slot per lane, or per block from BLOCK_RECORDS_FROM_LANES
    lanes on)."""

    uniform_words: int
    lanes: int
    trap_info: bool
    block_lanes: int = 1

    @property
    def block_records(self) -> bool:
        """Whether the records are per block (the shader keeps each block's lowest trapping lane's)."""
        return self.trap_info and self.lanes >= BLOCK_RECORDS_FROM_LANES

    def record_slot(self, lane: int) -> int:
        """The trap-info slot holding ``lane``'s record."""
        return lane // self.block_lanes if self.block_records else lane

    @property
    def uniforms(self) -> int:
        return REACHED + MAX_STEPS

    @property
    def resonance(self) -> int:
        return self.uniforms + self.uniform_words

    @property
    def trap_info_base(self) -> int:
        return self.resonance + RES_WORDS

    @property
    def words(self) -> int:
        slots = -(-self.lanes // self.block_lanes) if self.block_records else self.lanes
        return self.trap_info_base + (TRAP_WORDS * slots if self.trap_info else 0)

    def wgsl_constants(self) -> str:
        """The WGSL constants generated code uses to address ``rt``."""
        return (f"const TRAPS: u32 = {TRAPS}u;\nconst REACHED: u32 = {REACHED}u;\n"
                f"const UNIFORMS: u32 = {self.uniforms}u;\nconst RESONANCE: u32 = {self.resonance}u;\n"
                f"const TRAP_INFO: u32 = {self.trap_info_base}u;\nconst TRAP_WORDS: u32 = {TRAP_WORDS}u;\n"
                f"const LANE_ENDED: u32 = 0x{LANE_ENDED:08x}u;\n"
                f"const LANE_TRAPPED: u32 = 0x{LANE_TRAPPED:08x}u;")
