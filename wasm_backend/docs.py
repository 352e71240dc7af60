"""The wasm backend's section of docs/backends.md (``WasmBackend.documentation()``; the generator is
``atlas_web.docs_backends``).

Support comes from the lowering's rule tables, accuracy from the measured table ``ulp_table``
(``python -m atlas_web.accuracy wasm --write``). Imports no engine: documenting needs no runner.
"""

from __future__ import annotations

from atlas_web.docs_backends import BackendDocumentation

__all__ = ["backend_documentation", "UNSUPPORTED"]

#: rows this backend does not run yet, and why (docs/backends.md lists them)
UNSUPPORTED = {
}


def backend_documentation() -> BackendDocumentation:
    """The wasm backend's entry, from its rule tables and measured ulp table."""
    from .lowering import cooperative_operation_supported, op_supported
    from .ulp_table import MEASURED_ULPS

    notes = (
        "Compiled to WebAssembly with SIMD128 and run by wasmtime (natively) or the browser's engine. Lane code "
        "follows the shared lowering plan; programs whose instructions all have SIMD rules and whose branches are "
        "the same in four consecutive lanes (straight-line code, LOOP over a uniform count, counted loops and "
        "branches on uniform values, lane-id guards; short divergent regions of register-only code run masked) "
        "run four lanes per step (SIMD lane mode), the rest one lane at a time.",
        "Transcendentals come from the vectorized math library (`wasm_backend.mathlib`); F16/BF16 use its F32 "
        "functions and round once to their format.",
        "ParallelReduce sums F32 in blocks: each lane of four f32x4 accumulators adds 32 values in f32, then the "
        "block is added exactly into binary64 accumulators (error at most 32 eps times the sum of magnitudes, "
        "like NumPy's pairwise sum, far inside the contract's bound; a block with cancellation such as "
        "2**24 + 1 - 2**24 loses its ones, as NumPy's does); F64, F16 and BF16 add every value in binary64. "
        "Fixed 64K-element chunks combined in order give the same bits on every thread count and in the "
        "browser. A sum whose result is not finite (an infinity or NaN among the values, or partials past "
        "the range) is summed again in one thread, magnitudes of 2**512 and more scaled by 2**-512 apart, so "
        "overflowing partials never give NaN or an infinity the values do not have. Products run in binary64 "
        "in index order with the partial kept within 2**+-512 and its exponent counted apart (the reference's "
        "roundings, bit for bit while no F64 partial is subnormal), so partials never over- or underflow.",
        "FMA/FMS on F64 round once: Boldo and Melquiond's emulation inside its proved exponent window, and "
        "outside it the same core on operands scaled by exact powers of two, with subnormal results rounded "
        "once to the subnormal grid.",
        "GEMM and BatchedGEMM (F32, F64) run a blocked kernel (`coop_gemm_kernel`): A and B packed into "
        "per-launch scratch, cache blocks of 256 deep x 64 rows, a 4x16 register tile of f32x4 accumulators (F64: 4x8) "
        "with `relaxed_madd` (one rounding per product where the engine fuses: wasmtime and V8 with FMA; two "
        "elsewhere), the sums of each element in depth order within a block, blocks added in order. Shapes "
        "with m or n equal to 1 run a GEMV kernel (dot products or row-streaming axpy). MixedPrecisionGEMM "
        "converts its F16/BF16 A and B to f32 (exactly) while packing and runs the F32 kernel. Natively, a GEMM of "
        "2**24 multiply-adds or more splits its rows over the threads, bit-identical to one thread.",
        "QuantizedGEMM (I8 and F32 C) packs its i8 A and B as sign-extended i16 pairs along the depth and sums "
        "them with `i32x4.dot_i16x8_s` into i32 (4x16 register tile; depth blocks of 1024 keep i32 partial sums), "
        "then requantizes with f32x4 steps that round exactly as the contract says (convert, multiply, "
        "`nearest`, saturating truncation and narrows): the same bits as the reference. The relaxed int8 dot is "
        "not used (its second operand must be 7-bit to be exact). Threads split its rows as GEMM's.",
        "SparseGEMM (F32, F64) checks the whole CSR before writing (pointers in order, then the used column "
        "indices four at a time), then computes each row of C from its entries with the columns in chunks of "
        "8 v128 accumulators (`relaxed_madd`), one thread.",
        "LayerNorm, RMSNorm, GroupNorm and BatchNorm (`coop_norm`) compute their statistics in binary64 "
        "(elements widened exactly: F32 by `f64x2.promote_low_f32x4`, F16/BF16 through f32; two passes, the mean "
        "then the squared deviations, 8 elements a step in f64x2 accumulators), so no finite F32/F16/BF16 row "
        "over- or underflows; F64 is binary64 throughout, as the reference. An F32 LayerNorm/RMSNorm row whose "
        "statistics keep every step normal in f32 is normalized in f32x4 (four roundings); other rows, GroupNorm "
        "and BatchNorm in f64x2 in the reference's order, rounded once (BatchNorm: the reference's bits). "
        "Natively, 2**20 elements or more in several statistics groups split the groups over the threads "
        "(`env.parallel_gemm`, as Softmax; BatchNorm from 2**21), bit-identical to one thread: 2 threads 1.43-1.69x "
        "one at 1024 x 4096 on an idle 2-core machine (`benchmarks/threaded_kernels.py`; Attention 1.74-1.89x, "
        "FlashAttention 1.32-1.38x, Conv2D 1.25-1.70x, TensorContract 1.77-1.79x, LayerScale 1.27-1.32x, GEMM "
        "1.33-1.64x). Measured over the conformance cases (benchmarks/norms_accuracy.py): at most 0.07-0.22 of the "
        "conformance allowance (2 x the contract's bound + 1 ulp) for F32 and F64, 0.5 for F16/BF16 (their final "
        "rounding).",
        "TensorContract (F32, F64) is one GEMM (`coop_contract`): each operand is read in place where its stored "
        "axis order is the GEMM's layout or its transpose (trans flags; axes of size 1 ignored), else copied "
        "into that order in per-launch scratch first (loops generated from the shapes, contiguous runs by "
        "`memory.copy`), then GEMM's kernel (or GEMV's); 2**24 multiply-adds or more split its rows over the "
        "threads as GEMM's (the copies made once), bit-identical to one thread.",
        "LayerScale runs its own kernel (`coop_layer_scale`: f32x4/f64x2 products row by row; F16/BF16 in f32, "
        "where the product is exact, rounded once): the reference's bits, without the default expansion's one "
        "ParallelMapBinary step per row; natively from 2**21 elements its rows split over the threads.",
        "Softmax and LogSoftmax (`coop_softmax`) run three SIMD passes per row (max in four v128 accumulators; "
        "exp(x - m) summed in four, Softmax storing it; then times 1/s, or (x - m) - log(s)); F32's exp is "
        "XNNPACK's rr2-p5 for arguments <= 0 (3.1 u, results below f32's smallest normal flushed to 0), F64's the "
        "math library's; F16/BF16 rows go through an f32 scratch row. A row whose maximum is not finite (NaN, "
        "+inf, only -inf) is NaN. Natively, 2**20 elements or more split their rows over the threads, "
        "bit-identical to one thread. Measured on 256 x 1024 normal*4 f32 logits against binary64: Softmax "
        "28.6 u relative at most (median 4.1 u), LogSoftmax 9.4 u * max(1, |y|) absolute; within the contract's "
        "bound on every conformance case.",
        "Conv2D (F32, F64; F16/BF16 computed in f32 and rounded once; `coop_conv`) is im2col chunks of whole "
        "output rows (about 512 columns, padding written as zeros that take part in the products) in per-launch "
        "scratch, each multiplied by GEMM's kernel straight into the NCHW output (the bias filled first, then "
        "added to), per batch item and group; natively, from 2**24 multiply-adds, each group's output channels "
        "split over the threads in whole register tiles (each thread builds its own im2col chunks), "
        "bit-identical to one thread. "
        "Measured (F32, 1x64x20x20 and 2x8x12x13 5x5 against binary64): at most 2.6 u * sum|input * kernel|, "
        "the contract's bound being (K + 2) u times it.",
        "FFT (F32, F64; `coop_fft`) is radix-2 on SIMD128: bit reversal (swaps in place), twiddles per launch from "
        "two binary64 tables of about sqrt(n/2) entries made with the math library's sin and cos (rounded once), "
        "stages below 2**14 complex values block by block in cache, two stages a pass where both fit, no fused "
        "multiply-add; inverse times 1/n. "
        "Measured (F32 against binary64): normwise error 2.0 u * ||y|| at n = 2**10, 2.6 u at 2**16 (the "
        "contract allows (8 log2 n + 2) u). "
        "An n that is not a power of two runs Bluestein's algorithm (`coop_fft_bluestein`): the chirp "
        "exp(-+pi i j^2/n) (j^2 reduced modulo 2n exactly, f64 sin/cos, rounded once) and the transform of its "
        "padded conjugate per launch, then per item two forward radix-2 transforms of the power of two m >= 2n - 1 "
        "(the inverse by conjugation) and the chirp products. Measured (against binary64): F32 3.6-5.5 u * ||y||, "
        "F64 8.6-12.1 u for n from 4,099 to 10^6 (bound (24 log2 m + 8) u); 10^6 points take 519 ms against 83 ms for "
        "2**20 (numpy.fft: 83 ms, mixed radix), the prime 1,000,003 543 ms against numpy.fft's 526 ms (one thread, "
        "idle machine; `benchmarks/conv_fft.py --fft-n`).",
        "RoPE (`coop_rope`) builds each token's cos/sin table in binary64 (the angle (position + s) * freqs[p] "
        "exact, the math library's f64x2 sin/cos, rounded once) and rotates the token's rows with v128 ops "
        "(interleaved pairs by one shuffle); F16/BF16 through f32 rows. KVCacheUpdate (`coop_kvcache`) is one "
        "`memory.copy` per row; a position past the cache is known when the module is built. Attention "
        "(`coop_attention`) runs blocks of 64 query rows through GEMM's kernel: scores Q K^T (trans_b, alpha "
        "1/sqrt(d)) into a 64 x kv_len scratch, the Softmax row function over the keys each row sees, P V by one "
        "GEMM (causal: 64-key blocks, GEMM where the whole block is seen, row-by-row axpy on the diagonal, "
        "hidden blocks skipped); FlashAttention runs block_size x block_size tiles with an online softmax, its "
        "scratch set by block_size and head_dim only (48.8 KiB at block 64, head_dim 64, against Attention's "
        "272.8 KiB at kv_len 512 and NumPy's 8 MiB of scores for 8 heads). F16/BF16 compute in f32 (Q and K "
        "converted by GEMM's packing, values and output rows through the scratch). Natively, from 2**24 "
        "multiply-adds over several heads, ranges of heads run on the threads, each with its own scratch, "
        "bit-identical to one thread. Measured over "
        "the conformance cases: at most 0.02-0.03 of the conformance allowance (2 x the contract's bound + 1 "
        "ulp) for Attention/FlashAttention F32 and F64, 0.08 for RoPE, 0.5 for F16/BF16 (their final "
        "rounding); benchmarks/attention.py (1x8x512x64 f32 against binary64): max |error| 4.1e-7 (causal "
        "8.7e-7).",
    )
    return BackendDocumentation("wasm", "w", op_supported, cooperative_operation_supported, dict(MEASURED_ULPS), notes,
                                unsupported=UNSUPPORTED)
