"""Cases for the matrix kernels (rows of category "matrix": GEMM, BatchedGEMM, MixedPrecisionGEMM,
QuantizedGEMM), generated from each row: its types, its fields (a batch, alpha/beta or scales where the row has
them), odd sizes 1, 3, 17, 63 (257 once per row without a batch), every transpose, leading dimensions and batch
strides past packed, alpha and beta other than their defaults, beta == 0 over a C full of NaN, NaN and infinities
in float inputs, zero dimensions; and traps (each array one element short).

``compare`` checks a backend's C against the reference's. Rows with float inputs: with the contract's bound
(docs/semantics.md, Matrix kernels), computed here from the inputs: NaN where the reference has NaN, the same
infinity, and otherwise ``|got - want| <= gamma(k + 3) * (|alpha| * sum |a||b| + |beta| * |c|) + (k + 3) * eta``
(the contract's ``gamma(k + 2)`` plus the reference's own rounding; u of f32 unless C is f64). Rows with integer
inputs (QuantizedGEMM): bit for bit. The elements of C that are not written (padding between rows, between items)
must keep their bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from atlas_web import AtlasTrap, LaunchConfig, ProgramBuilder
from atlas_web.isa import MOV_IMM, OPCODE_TABLE, Address, Register, Type, array_operands
from atlas_web.isa.extents import reads_at_launch
from atlas_web.isa.instructions import INSTRUCTION_CLASSES


__all__ = ["MATRIX_ROWS", "MatrixCase", "Output", "encode_array", "decode_array", "matrix_cases", "trap_cases", "run_matrix", "run_with_arrays", "compare",
           "fill_inputs", "short_cases"]

#: every dense matrix row of the opcode table
MATRIX_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "matrix"
                    and not any(reads_at_launch(op) for op in info.address_operands))   # SparseGEMM: test_sparse
SHAPES = ((1, 1, 1), (3, 3, 3), (17, 3, 63), (63, 17, 3))
#: the accumulation's unit roundoff and smallest subnormal, by C's type (f32 accumulates f16 and bf16 inputs)
_UNIT_ROUNDOFF = {Type.F32: 2.0 ** -24, Type.F64: 2.0 ** -53}
_SMALLEST_SUBNORMAL = {Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}
#: the scales of QuantizedGEMM's cases
SCALES = dict(a_scale=0.02, b_scale=0.03, c_scale=0.05)
FIRST_ADDRESS_REGISTER = 10


@dataclass(frozen=True)
class MatrixCase:
    name: str
    info: object
    ty: Type
    fields: dict
    #: how the inputs are filled: "random", "nan_c" (C all NaN), "specials" (NaN and infinities in A and B)
    fill: str = "random"
    #: the array operand made one element short (the launch traps), or None
    short: str | None = None

    def __str__(self) -> str:
        return self.name

    def instruction(self, addresses: dict):
        return INSTRUCTION_CLASSES[self.info.name](**addresses, **self.fields, ty=self.ty)

    def probe(self):
        """The instruction at placeholder addresses (for its extents)."""
        return self.instruction({op.name: Address.BufferOffset(2) for op in self.info.address_operands})

    def arrays(self) -> dict:
        """Array operand name -> its ArrayOperand (extent and element type)."""
        return {array.name: array for array in array_operands(self.probe())}

    @property
    def exact(self) -> bool:
        """Whether the row's inputs are integers (its result is exact, compared bit for bit)."""
        return not self.arrays()["a"].ty.is_float()


def _has(info, name: str) -> bool:
    return any(op.name == name for op in info.operands)


def _fields(info, m: int, n: int, k: int, **extra) -> dict:
    """The row's fields for an m x n x k product (3 batch items where the row has a batch)."""
    out = dict(m=m, n=n, k=k)
    if _has(info, "batch"):
        out["batch"] = 3
    out.update({name: value for name, value in SCALES.items() if _has(info, name)})
    out.update({name: value for name, value in extra.items() if _has(info, name)})
    return out


def _padded(info, m, n, k, trans_a, trans_b) -> dict:
    """Leading dimensions 3 past each stored row, and batch strides 5 past packed."""
    out = dict(lda=(m if trans_a else k) + 3, ldb=(k if trans_b else n) + 3, ldc=n + 3)
    if _has(info, "batch"):
        rows_a, rows_b = (k if trans_a else m), (n if trans_b else k)
        out.update(stride_a=rows_a * out["lda"] + 5, stride_b=rows_b * out["ldb"] + 5, stride_c=m * out["ldc"] + 5)
    return out


def _variants(info, m, n, k) -> dict[str, dict]:
    both = dict(trans_a=True, trans_b=True)
    out = {"NN": {}, "TN": dict(trans_a=True), "NT": dict(trans_b=True), "TT": both,
           "ld": _padded(info, m, n, k, False, False)}
    if _has(info, "alpha"):
        out["alpha_beta"] = dict(alpha=-1.5, beta=0.75)
        out["TT_ld_alpha_beta"] = dict(**both, **_padded(info, m, n, k, True, True), alpha=0.375, beta=-2.0)
    else:
        out["TT_ld_scales"] = dict(**both, **_padded(info, m, n, k, True, True), a_scale=0.5, b_scale=1.0, c_scale=1.0)
    return out


def matrix_cases() -> list[MatrixCase]:
    out = []
    for info in MATRIX_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            def case(tag, fields, fill="random"):
                out.append(MatrixCase(f"{info.name}.{ty.name}.{tag}", info, ty, fields, fill))
            for m, n, k in SHAPES:
                for tag, extra in _variants(info, m, n, k).items():
                    case(f"{m}x{n}x{k}.{tag}", _fields(info, m, n, k, **extra))
            if _has(info, "beta"):
                case("beta0_nan_in_c", _fields(info, 5, 7, 9, alpha=2.0, beta=0.0), "nan_c")
                case("nan_inf", _fields(info, 4, 5, 3, beta=0.5), "specials")
                case("nan_inf_TT", _fields(info, 4, 5, 3, trans_a=True, trans_b=True), "specials")
                case("k0_beta", _fields(info, 3, 4, 0, alpha=3.0, beta=0.5))
                case("k0_beta0", _fields(info, 3, 4, 0, beta=0.0), "nan_c")
            else:
                case("k0", _fields(info, 3, 4, 0))
                case("saturating", _fields(info, 5, 7, 63, a_scale=1.0, b_scale=1.0, c_scale=1.0))
                case("c_scale0", _fields(info, 5, 7, 9, c_scale=0.0))
            case("m0", _fields(info, 0, 3, 4, beta=0.5))
            case("n0", _fields(info, 3, 0, 4, beta=0.5))
            if _has(info, "batch"):
                case("batch0", _fields(info, 3, 4, 5, batch=0))
                case("batch1_T", _fields(info, 17, 3, 63, batch=1, trans_a=True))
            elif ty is Type.F32:
                case("257x257x257", _fields(info, 257, 257, 257, alpha=0.5, beta=1.0))
    return out


def short_cases(rows, fields) -> list[MatrixCase]:
    """A case per array operand of each row of ``rows`` (its first type, ``fields(info)``) with that array one
    element short: the launch traps."""
    out = []
    for info in rows:
        ty = min(info.types, key=lambda t: t.code)
        for op in info.address_operands:
            out.append(MatrixCase(f"{info.name}.{ty.name}.{op.name}_short", info, ty, fields(info), short=op.name))
    return out


def trap_cases() -> list[MatrixCase]:
    return short_cases(MATRIX_ROWS, lambda info: _fields(info, 3, 5, 4, trans_b=True, ldc=6, beta=1.0))


def fill_inputs(case: MatrixCase, seed: int, written: str = "c") -> dict[str, np.ndarray]:
    """Array name -> its values (as float64), representable in the array's type; the fills "nan_c" (NaN in the
    written array ``written``) and "specials" (NaN and infinities among A's and B's values)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, array in case.arrays().items():
        if array.ty.is_float():   # uniform in [-4, 4), cut to the type through its bytes
            values = decode_array(array.ty, encode_array(array.ty, rng.uniform(-4, 4, array.elements)))
        else:
            lo, hi = array.ty.int_range()
            values = rng.integers(lo, hi + 1, array.elements).astype(np.float64)
        arrays[name] = values
    if case.fill == "nan_c":
        arrays[written][:] = np.nan
    if case.fill == "specials":
        for name, specials in (("a", (np.nan, np.inf, -np.inf, 0.0)), ("b", (np.inf, 0.0, np.nan, -np.inf))):
            values = arrays[name]
            for position, value in zip(range(1, len(values), 5), specials):
                values[position] = value
    return arrays


def run_matrix(backend, case: MatrixCase, seed: int = 11):
    """Run ``case`` on ``backend``: (inputs by array name, C's whole buffer afterwards, trap or None). The
    addresses are held in lane 0's registers (a short array traps at the launch, not at verify)."""
    arrays = case.arrays()
    inputs = fill_inputs(case, seed)
    raw, trap = run_with_arrays(backend, case, arrays, inputs, "c")
    return inputs, Output(arrays["c"].ty, raw), trap


def run_with_arrays(backend, case, arrays: dict, inputs: dict, written: str) -> tuple[bytes, object]:
    """Run ``case.instruction(addresses)`` alone on ``backend`` (one lane) with one buffer per array operand
    holding ``inputs[name]`` (float64 values of ``arrays[name].ty``; ``case.short`` names one cut one element
    short), each address held in lane 0's registers (a short array traps at the launch, not at verify):
    (the bytes of array ``written`` afterwards, the AtlasTrap or None). Frees the buffers."""
    handles = {}
    for name, values in inputs.items():
        ty = arrays[name].ty
        data = encode_array(ty, values)
        if case.short == name:
            data = data[:max(0, len(data) - ty.size_bytes())]
        handles[name] = int(backend.allocate_buffer(max(len(data), 1)))
        backend.copy_to_buffer(handles[name], data)
    b = ProgramBuilder()
    addresses = {}
    for k, op in enumerate(case.info.address_operands):
        register = Register(FIRST_ADDRESS_REGISTER + k)
        b.add(MOV_IMM(dst=register, value=handles[op.name] << 32, ty=Type.U64))
        addresses[op.name] = Address.RegisterIndirect(register, 0)
    b.add(case.instruction(addresses))
    trap = None
    try:
        backend.execute_program(b.build(), LaunchConfig())
    except AtlasTrap as caught:
        trap = caught
    out = arrays[written]
    raw = bytes(backend.copy_from_buffer(handles[written]))[:out.elements * out.ty.size_bytes()]
    for handle in handles.values():
        backend.free_buffer(handle)
    return raw, trap


@dataclass(frozen=True)
class Output:
    """C's bytes after a launch, and its values as float64."""

    ty: Type
    raw: bytes

    @property
    def values(self) -> np.ndarray:
        return decode_array(self.ty, self.raw)


#: the NumPy dtype of each type the matrix rows use (bf16: the high half of an f32)
_NUMPY = {Type.F32: "<f4", Type.F64: "<f8", Type.F16: "<f2", Type.I8: "i1", Type.U8: "u1", Type.I16: "<i2",
          Type.U16: "<u2", Type.I32: "<i4", Type.U32: "<u4", Type.I64: "<i8", Type.U64: "<u8"}


def encode_array(ty: Type, values: np.ndarray) -> bytes:
    """Little-endian bytes of ``values`` (float64, representable in ``ty``)."""
    if ty is Type.BF16:
        return (values.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
    return values.astype(_NUMPY[ty]).tobytes()


def decode_array(ty: Type, raw: bytes) -> np.ndarray:
    """The values of ``ty`` in ``raw``, as float64."""
    if ty is Type.BF16:
        return (np.frombuffer(raw, dtype="<u2").astype("<u4") << 16).view("<f4").astype(np.float64)
    return np.frombuffer(raw, dtype=_NUMPY[ty]).astype(np.float64)


def _stored(flat: np.ndarray, rows: int, cols: int, ld: int, start: int) -> np.ndarray:
    index = start + np.arange(rows, dtype=np.int64)[:, None] * (ld or cols) + np.arange(cols, dtype=np.int64)
    return flat[index]


def _tolerance(case: MatrixCase, inputs: dict) -> np.ndarray:
    """Per element of C's buffer: the bound (0 where C is not written)."""
    f = case.fields
    m, n, k = f["m"], f["n"], f["k"]
    trans_a, trans_b = f.get("trans_a", False), f.get("trans_b", False)
    alpha, beta = getattr(case.probe(), "alpha", 1.0), getattr(case.probe(), "beta", 0.0)
    lda, ldb, ldc = f.get("lda", 0), f.get("ldb", 0), f.get("ldc", 0) or n
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    strides = {"a": f.get("stride_a", 0) or a_shape[0] * (lda or a_shape[1]),
               "b": f.get("stride_b", 0) or b_shape[0] * (ldb or b_shape[1]),
               "c": f.get("stride_c", 0) or m * ldc}
    c_ty = case.arrays()["c"].ty
    u = _UNIT_ROUNDOFF.get(c_ty, 2.0 ** -24)   # an integer C (exact rows): only where it is written matters
    gamma = (k + 3) * u / (1 - (k + 3) * u)
    tolerance = np.zeros(len(inputs["c"]))
    with np.errstate(invalid="ignore"):
        for item in range(f.get("batch", 1)):
            a = np.abs(_stored(inputs["a"], *a_shape, lda, item * strides["a"]))
            b = np.abs(_stored(inputs["b"], *b_shape, ldb, item * strides["b"]))
            magnitude = abs(alpha) * ((a.T if trans_a else a) @ (b.T if trans_b else b)) if k else np.zeros((m, n))
            position = _stored(np.arange(len(inputs["c"])), m, n, ldc, item * strides["c"])
            c_term = abs(beta) * np.abs(inputs["c"][position]) if beta != 0 else 0.0
            tolerance[position] = gamma * (magnitude + c_term) + (k + 3) * _SMALLEST_SUBNORMAL.get(c_ty, 1.0)
    return tolerance


def compare(case: MatrixCase, inputs: dict, want: Output, got: Output) -> list:
    """The elements of C where ``got`` breaks the contract against ``want`` (the reference's): (index, want,
    got, tolerance), empty when it keeps it."""
    if want.raw == got.raw:
        return []
    tolerance = _tolerance(case, inputs)
    w, g = want.values, got.values
    unsigned = f"<u{want.ty.size_bytes()}"
    same_bits = np.frombuffer(want.raw, dtype=unsigned) == np.frombuffer(got.raw, dtype=unsigned)
    with np.errstate(invalid="ignore"):
        special = np.isnan(w) | np.isinf(w)
        ok = np.where(special, (np.isnan(w) & np.isnan(g)) | (w == g), np.abs(g - w) <= tolerance)
    ok = np.where((tolerance == 0) | case.exact, same_bits, ok)
    return [(int(i), float(w[i]), float(g[i]), float(tolerance[i])) for i in np.flatnonzero(~ok)]
