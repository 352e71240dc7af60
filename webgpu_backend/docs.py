"""The WebGPU backend's section of docs/backends.md (``WebGpuBackend.documentation()``; the generator is
``atlas_web.docs_backends``).

Support comes from the WGSL generator's rule tables (``wgsl.support``), accuracy from the measured
tables ``ulp_table`` (``python -m atlas_web.accuracy webgpu --write``) and ``wgsl.accuracy``
(benchmarks/wgsl_accuracy.py). Imports no engine: documenting needs no device.
"""

from __future__ import annotations

from atlas_web.accuracy import operation_key
from atlas_web.docs_backends import BackendDocumentation
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.isa.opcodes import OpcodeInfo
from atlas_web.isa.operations import COOPERATIVE_OPERATION_TYPES, ELEMENT_FUNCTIONS
from atlas_web.isa.types import Type

from .ulp_table import MEASURED_ULPS
from .wgsl.accuracy import DEVICE, MEASURED
from .wgsl.support import operation_supported, supports_instruction

__all__ = ["backend_documentation", "NOTES", "UNSUPPORTED"]

NOTES = (
    "Compiled to WGSL compute shaders (one per stage of the lowering plan, one kernel per cooperative "
    "step) and run by wgpu-py natively (Vulkan; Mesa lavapipe without a GPU) or `navigator.gpu` in the "
    "browser, from the same generator.",
    "F64: WGSL has no 64-bit float, so every F64 instruction raises `UnsupportedOperation` (no software "
    "emulation); `init_backend(AUTO, program=...)` skips webgpu for such programs and picks the next backend "
    "that supports every (instruction, type) of the program.",
    "F16 computes in f32 and rounds to nearest even in integer code on the bits (also where the device has "
    "shader-f16: WGSL's `f16()` may round either way, and an NVIDIA H200 kept an overflowed product finite); "
    "BF16 rounds to nearest even on the bits. 8/16-bit integers live in u32 words, 64-bit ones "
    "in `vec2<u32>`, the extended integers in a per-lane register file in memory (limb loops). An 8- or "
    "16-bit store writes its bits of a 32-bit word in one atomic step (a compare-exchange loop; `wgsl/subword.py`), "
    "so the stores of neighbouring lanes keep each other's bytes and racing stores into one element leave one of "
    "their values, as docs/semantics.md bounds a data race.",
    "Transcendentals: the WGSL builtins were measured on " + DEVICE + " and replaced by our own f32 "
    "implementations wherever they are worse than 4 ulp (all of them there); GELU and POW carry their "
    "argument in double-f32. F16/BF16 results are the f32 function rounded once (bound: 1 ulp). The table "
    "below is the largest error seen by the backend's measurement and, for f32, the transcendentals' own "
    "sweep (2^20 inputs each); `ulp_tolerance` adds one ulp of margin to the sweep's figure.",
    "FMA/FMS, and DIV/RCP/SQRT/RSQRT, are computed exactly in integer arithmetic (WGSL's `fma` may round "
    "twice, its `/` and `sqrt` may be 2.5 ulp off: an NVIDIA H200 was 1 ulp off); signed REM is `a - (a / b) * "
    "b` (that H200's signed `%` was wrong for negative operands). A device that flushes f32 subnormals "
    "(`device_info()[\"subnormals\"]`, found by a probe shader) keeps that behaviour in the other arithmetic "
    "(docs/semantics.md, Numbers). MIN/MAX test NaN on "
    "the bits; products and constants that must not be fused or folded pass through a run-time XOR with zero.",
    "ParallelReduce accumulates floats in f32 in a tree (within the contract's `count * eps`); float sums "
    "keep magnitudes of 2**64 and more scaled by 2**-64 in an accumulator of their own, so no partial of "
    "finite values overflows (an infinity or NaN in the result comes from the values); float products "
    "multiply f32 mantissas with the exponents added apart, so no partial over- or underflows; integer "
    "reductions wrap exactly. A source array that overlaps the destination at another offset is copied "
    "first, so ParallelMap/ParallelMapBinary read every value as it was before the instruction.",
    "GEMM and BatchedGEMM (F32) run one tiled shader per shape (`wgsl/kernels/gemm.py`): 64 x 64 tiles of C per "
    "workgroup of 16 x 16 invocations, each a 4 x 4 block in registers, 16-deep slices of op(A) and op(B) staged "
    "in workgroup memory; f32 products and sums, each rounded (within the contract's bound).",
    "MixedPrecisionGEMM (F16, BF16) runs the same shader with its halves unpacked to f32 while staged "
    "(`unpack2x16float`, or the bf16 bits shifted; exact, no shader-f16 needed). QuantizedGEMM (I8 and F32 C) "
    "stages sign-extended i8 (`extractBits`) and sums in wrapping i32, converts the sum to f32 rounded to even "
    "exactly (its two 16-bit halves), multiplies by the scale rounded on the host as the reference's f32 steps, "
    "and for I8 C rounds half to even, maps NaN to 0, saturates and writes each byte into its "
    "word in one atomic step (compare-exchange): the reference's bits. `dot4I8Packed` is not used.",
    "SparseGEMM (F32; `wgsl/kernels/sparse.py`): the extent of a_values and a_indices (a_ptr[m]) is known only "
    "on the device, so a first dispatch (one workgroup) checks it against their allocations, then the pointers "
    "and the used column indices, and traps itself with lane -1 and the reference's record (the first bad "
    "element by a workgroup atomicMin; the host checks the handles and alignment); then one invocation per "
    "element of C sums its row's entries in order in f32. F64 is unsupported (no f64 in WGSL).",
    "TensorContract (F32; `wgsl/kernels/contract.py`) is one GEMM shader on the plan of "
    "`atlas_web.isa.contraction`: an operand stored in the GEMM's layout or its transpose is read as a matrix, "
    "any other is gathered while staged (row and column split into its own axes' coordinates, sizes and strides "
    "fixed in the shader): no copy, no scratch.",
    "LayerNorm, RMSNorm, GroupNorm and BatchNorm (F32; F16 and BF16 as Softmax's) run one shader per shape "
    "(`wgsl/kernels/norm.py`): a "
    "workgroup of 16 per row (GroupNorm group, BatchNorm item and channel; 64 past 2^19 elements), each statistic "
    "the invocations' partials added in order by one invocation between two barriers, in f32 on the row scaled "
    "by the power of two that brings its largest magnitude into "
    "[1, 2) (so no sum or square of a finite row over- or underflows); two passes (mean, then squared "
    "deviations), then the outputs in the reference's order. Measured over the conformance cases "
    "(benchmarks/norms_accuracy.py, lavapipe): at most 0.05-0.19 of the conformance allowance (2 x the "
    "contract's bound + 1 ulp). In one headless Chromium page (SwiftShader) LayerNorm and RMSNorm 256 x 1024 run "
    "2.2x and 2.8x TF.js webgpu's op compositions (benchmarks/peers/nn_webgpu.py).",
    "Softmax and LogSoftmax (F32; F16 and BF16 read into f32, computed in f32, each output rounded once and "
    "stored into its half-word in one atomic step, as Conv2D's) run one shader per shape "
    "(`wgsl/kernels/softmax.py`): a workgroup of 16 per row (64 past 2^19 elements; "
    "few invocations: SwiftShader and llvmpipe switch through every invocation at each barrier; rows looped only "
    "past the device's workgroup limit), the maximum over the finite elements compared as ordered bit keys, "
    "NaN/+inf/only -inf rows written NaN as bits, exp(x - m) by XNNPACK's rr2-p5 polynomial (3.1 u), each "
    "reduction the invocations' partials folded in order by one invocation between two barriers, then "
    "exp(x - m) * (1/s) or (x - m) - log_f32(s). In one headless Chromium page (SwiftShader) 2.7x TF.js webgpu's "
    "tf.softmax at 256 x 1024 and 5.4x at 1024 x 1024 (benchmarks/peers/softmax.py --webgpu). Measured on "
    "256 x 1024 normal*4 f32 logits against binary64 (lavapipe): Softmax 28.6 u relative at most (median 4.1 u), "
    "LogSoftmax 9.4 u * max(1, |y|) absolute; within the contract's bound on every conformance case.",
    "RoPE (F32; F16/BF16 computed in f32, stored into their half-words in one atomic step; "
    "`wgsl/kernels/attention.py`) rotates up to 4 pairs per invocation (a grid-stride loop) with the angle in f32 "
    "and the library's range-reduced cos_f32/sin_f32 (one reduction for both; no workgroup barrier: in one "
    "headless Chromium page, SwiftShader, 1 x 256 x 8 x 64 ran 1.12-1.18x TF.js webgpu's composition with WGSL's "
    "loose builtin sin/cos; 0.77-0.91x with one pair per invocation, 0.12x with a barrier per workgroup; "
    "benchmarks/peers/nn_webgpu.py); KVCacheUpdate is a host step (buffer "
    "copies, or writes through whole words; the position checked first); Attention and FlashAttention (F32; "
    "F16/BF16 as RoPE) run a workgroup of one invocation per key of a tile per query row with an online softmax "
    "over tiles of 64 keys (FlashAttention: block_size keys, at most 256; its workgroup memory 12 * tile + "
    "8 * head_dim + 4 bytes, set by block_size and head_dim alone) (the query row and the output row in workgroup "
    "memory, tile "
    "maxima as ordered bit keys, a NaN or +inf score making the row NaN; each tile's maximum and sum folded by one "
    "invocation between barriers), a causal row walking only its keys. In one headless Chromium page (SwiftShader) "
    "1 x 8 x 256 x 64 runs 0.8-1.0x TF.js webgpu's matMul/softmax/matMul (0.3-0.7x with halving trees; "
    "benchmarks/peers/nn_webgpu.py). "
    "Measured over the conformance cases (lavapipe): at most 0.03 of the conformance allowance for "
    "Attention/FlashAttention, 0.38 for RoPE (its f32 angle).",
    "Conv2D (F32; F16 and BF16 read into f32, computed in f32, each output rounded once to nearest even by integer "
    "steps and stored into its half of a word in one atomic step) is an implicit GEMM (`wgsl/kernels/conv2d.py`): "
    "GEMM's 64 x 64 tiles, the im2col values computed while staging each 16-deep slice (padding zeros take part "
    "in the products), the bias added at the store. Measured (lavapipe, against binary64): at most "
    "3.6 u * sum|input * kernel| (bound (K + 2) u times it).",
    "F16 and BF16 against the reference rounded once to the type (benchmarks/nn_accuracy_webgpu.py, lavapipe, "
    "one random case per kernel): Softmax, LogSoftmax, LayerNorm, RMSNorm, BatchNorm, GroupNorm, RoPE and Conv2D "
    "at most 1 ulp of the type (BF16 Softmax, LogSoftmax, BatchNorm, GroupNorm, RoPE, Conv2D: every output "
    "correctly rounded); Attention 1 ulp in F16 and 4 in BF16, FlashAttention 2 in F16 and 1 in BF16 (outputs "
    "brought near zero by cancellation; largest absolute errors 6.1e-05 and 1.2e-04).",
    "FFT (F32) is radix-2 with one dispatch per pass (`wgsl/kernels/fft.py`): bit reversal, then a butterfly per "
    "invocation per stage; twiddles from k reduced exactly to an octant and the library's sin/cos polynomials "
    "(not WGSL's loose sin/cos); the inverse's 1/n in the last stage. Measured (lavapipe, against binary64): "
    "normwise error 2.2 u * ||y|| at n = 2**10, 2.8 u at 2**16 (bound (8 log2 n + 2) u). An n that is not a power "
    "of two runs Bluestein's algorithm: B (the transform of the padded conjugate chirp, the chirp exp(-+pi i j^2/n) "
    "from j^2 reduced modulo 2n exactly and the same octant reduction) and every item's padded x * w in the "
    "launcher's work buffer (8 m (batch + 1) bytes, m the power of two >= 2n - 1; past the binding limit the "
    "launch is refused naming it), two forward radix-2 transforms of m per item with conj(A * B) between them, "
    "the bit reversals folded into those shaders, then conj(a) * w. Measured (lavapipe, against binary64): "
    "1.7-5.1 u * ||y|| for n from 3 to 10^5 (bound (24 log2 m + 8) u).",
    "On Mesa's llvmpipe a lane may take at most 60000 backward jumps per dispatch (the engine ends longer "
    "loops silently). There the backend's default budget is 60000, so a runaway loop traps BUDGET_EXCEEDED "
    "exactly as the other backends do with that budget; with a larger budget given, a lane past 60000 "
    "backward jumps in one dispatch raises `ExecutionFailed` instead of giving wrong results.",
    "Lane state past one binding (`state_windows.py`): the registers a lane keeps between stages are slot-major "
    "words of the state buffer; when they exceed `maxStorageBufferBindingSize` (softmax at 10M lanes: 7 slots, "
    "280 MB, against lavapipe's and SwiftShader's 128 MiB) the slots are split into windows of whole slots, each "
    "its own binding and its own buffer (so `maxBufferSize`, 256 MiB on some browsers and GPUs, does not limit "
    "the lane state), and every access names its window when the shader is generated. Measured on lavapipe: "
    "the softmax example at 10M lanes with `maxBufferSize` patched to 256 MiB runs in 3 windows (120, 120, "
    "40 MB) in 7.0 s (first launch and read), largest relative error 3.9e-7 against NumPy's binary64; separate "
    "buffers launch as fast as windows of one buffer did (1M lanes in 4 windows, 336 against 350 ms warm). "
    "Still refused, saying how many lanes fit: wide (over 64-bit) "
    "registers or shared memory kept between stages, registers of more than four words, more windows than "
    "`maxStorageBuffersPerShaderStage` allows.",
)



def _supports(info: OpcodeInfo, ty: Type | None) -> bool:
    if info.types and ty not in info.types:
        return False
    if not info.types and ty is not None:
        return False
    return supports_instruction(info, ty)


def _supports_operation(operation: object, ty: Type) -> bool:
    return operation_supported(operation, ty)


def _ulps() -> dict[tuple[str, str], float]:
    """The largest error seen per (operation key, type name): the backend measured end to end against the
    reference by ``python -m atlas_web.accuracy webgpu --write`` (``ulp_table``, every float type), and for
    f32 the transcendentals' own sweep (``wgsl.accuracy``: 2^20 inputs over their hard ranges), whichever
    is larger."""
    out = dict(MEASURED_ULPS)
    keys = [(op, op) for op in MEASURED if op in INSTRUCTION_CLASSES]
    keys += [(operation_key(operation), name) for operation, name in ELEMENT_FUNCTIONS.items()
             if name in MEASURED and Type.F32 in COOPERATIVE_OPERATION_TYPES[operation]]
    for key, name in keys:
        out[(key, "F32")] = max(out.get((key, "F32"), 0.0), float(MEASURED[name]["ours"]))
    return out


#: rows the WGSL generator has no kernel for yet, and why
_NO_KERNEL = "no WGSL kernel yet (issue 10; it has no default expansion): runs on cpu"
UNSUPPORTED = {
}

#: the types the WGSL generator has no representation for, and why
UNSUPPORTED_TYPES = {
    Type.F64: "WGSL has no 64-bit float (an f64 needs a double-f32 or integer emulation this backend does not "
              "have); programs that use f64 raise UnsupportedOperation",
}


def backend_documentation():
    """The webgpu backend's ``BackendDocumentation`` (support from its rule tables, measured ulps, notes)."""
    return BackendDocumentation("webgpu", "g", _supports, _supports_operation, _ulps(), NOTES,
                                unsupported=UNSUPPORTED, unsupported_types=UNSUPPORTED_TYPES)
