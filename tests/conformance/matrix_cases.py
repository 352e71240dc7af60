"""Cases for the matrix kernels (rows of category "matrix": GEMM, BatchedGEMM), generated from each row: its
types, its fields (a batch where the row has one), odd sizes 1, 3, 17, 63 (257 once), every transpose, leading
dimensions and batch strides past packed, alpha and beta other than their defaults, beta == 0 over a C full of
NaN, NaN and infinities in the inputs, zero dimensions; and traps (each array one element short).

``compare`` checks a backend's C against the reference's with the contract's bound (docs/semantics.md, Matrix
kernels), computed here from the inputs: NaN where the reference has NaN, the same infinity, and otherwise
``|got - want| <= gamma(k + 3) * (|alpha| * sum |a||b| + |beta| * |c|) + (k + 3) * eta`` (the contract's
``gamma(k + 2)`` plus the reference's own rounding); the elements of C that are not written (padding between
rows, between items) must keep their bits.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from atlas_web import AtlasTrap, LaunchConfig, ProgramBuilder
from atlas_web.isa import MOV_IMM, OPCODE_TABLE, Address, Register, Type, array_operands
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.isa.opcodes import OperandKind

__all__ = ["MATRIX_ROWS", "MatrixCase", "matrix_cases", "trap_cases", "run_matrix", "compare"]

#: every matrix row of the opcode table
MATRIX_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "matrix")
SHAPES = ((1, 1, 1), (3, 3, 3), (17, 3, 63), (63, 17, 3))
_DTYPE = {Type.F32: np.float32, Type.F64: np.float64}
_UNIT_ROUNDOFF = {Type.F32: 2.0 ** -24, Type.F64: 2.0 ** -53}
_SMALLEST_SUBNORMAL = {Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}
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


def _has(info, name: str) -> bool:
    return any(op.name == name for op in info.operands)


def _fields(info, m: int, n: int, k: int, **extra) -> dict:
    """The row's fields for an m x n x k product (3 batch items where the row has a batch)."""
    out = dict(m=m, n=n, k=k)
    if _has(info, "batch"):
        out["batch"] = 3
    out.update(extra)
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
    return {
        "NN": {}, "TN": dict(trans_a=True), "NT": dict(trans_b=True), "TT": both,
        "ld": _padded(info, m, n, k, False, False),
        "alpha_beta": dict(alpha=-1.5, beta=0.75),
        "TT_ld_alpha_beta": dict(**both, **_padded(info, m, n, k, True, True), alpha=0.375, beta=-2.0),
    }


def matrix_cases() -> list[MatrixCase]:
    out = []
    for info in MATRIX_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            def case(tag, fields, fill="random"):
                out.append(MatrixCase(f"{info.name}.{ty.name}.{tag}", info, ty, fields, fill))
            for m, n, k in SHAPES:
                for tag, extra in _variants(info, m, n, k).items():
                    case(f"{m}x{n}x{k}.{tag}", _fields(info, m, n, k, **extra))
            case("beta0_nan_in_c", _fields(info, 5, 7, 9, alpha=2.0, beta=0.0), "nan_c")
            case("nan_inf", _fields(info, 4, 5, 3, beta=0.5), "specials")
            case("nan_inf_TT", _fields(info, 4, 5, 3, trans_a=True, trans_b=True), "specials")
            case("m0", _fields(info, 0, 3, 4, beta=0.5))
            case("n0", _fields(info, 3, 0, 4, beta=0.5))
            case("k0_beta", _fields(info, 3, 4, 0, alpha=3.0, beta=0.5))
            case("k0_beta0", _fields(info, 3, 4, 0, beta=0.0), "nan_c")
            if _has(info, "batch"):
                case("batch0", _fields(info, 3, 4, 5, batch=0))
                case("batch1_T", _fields(info, 17, 3, 63, batch=1, trans_a=True))
            elif ty is Type.F32:
                case("257x257x257", _fields(info, 257, 257, 257, alpha=0.5, beta=1.0))
    return out


def trap_cases() -> list[MatrixCase]:
    out = []
    for info in MATRIX_ROWS:
        ty = min(info.types, key=lambda t: t.code)
        for op in info.address_operands:
            fields = _fields(info, 3, 5, 4, trans_b=True, ldc=6, beta=1.0)
            out.append(MatrixCase(f"{info.name}.{ty.name}.{op.name}_short", info, ty, fields, short=op.name))
    return out


def _inputs(case: MatrixCase, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    rng = random.Random(seed)
    dtype = _DTYPE[case.ty]
    arrays = {name: np.array([rng.uniform(-4, 4) for _ in range(count)], dtype=dtype)
              for name, count in sizes.items()}
    if case.fill == "nan_c":
        arrays["c"][:] = np.nan
    if case.fill == "specials":
        for name, specials in (("a", (np.nan, np.inf, -np.inf, 0.0)), ("b", (np.inf, 0.0, np.nan, -np.inf))):
            values = arrays[name]
            for position, value in zip(range(1, len(values), 5), specials):
                values[position] = value
    return arrays


def run_matrix(backend, case: MatrixCase, seed: int = 11):
    """Run ``case`` on ``backend``: (inputs by array name, C's whole buffer afterwards, trap or None). The
    addresses are held in lane 0's registers (a short array traps at the launch, not at verify)."""
    sizes = {array.name: array.elements for array in array_operands(case.probe())}
    inputs = _inputs(case, sizes, seed)
    handles = {}
    for name, values in inputs.items():
        data = values.tobytes()
        if case.short == name:
            data = data[:max(0, len(data) - case.ty.size_bytes())]
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
    raw = bytes(backend.copy_from_buffer(handles["c"]))[:sizes["c"] * case.ty.size_bytes()]
    c = np.frombuffer(raw, dtype=_DTYPE[case.ty]).copy()
    for handle in handles.values():
        backend.free_buffer(handle)
    return inputs, c, trap


def _stored(flat: np.ndarray, rows: int, cols: int, ld: int, start: int) -> np.ndarray:
    ld = ld or cols
    return np.array([[flat[start + r * ld + j] for j in range(cols)] for r in range(rows)], dtype=np.float64)


def _tolerance(case: MatrixCase, inputs: dict) -> np.ndarray:
    """Per element of C's buffer: the bound (0 where C is not written)."""
    f = case.fields
    m, n, k = f["m"], f["n"], f["k"]
    trans_a, trans_b = f.get("trans_a", False), f.get("trans_b", False)
    alpha, beta = case.probe().alpha, case.probe().beta
    lda, ldb, ldc = f.get("lda", 0), f.get("ldb", 0), f.get("ldc", 0) or n
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    strides = {"a": f.get("stride_a", 0) or a_shape[0] * (lda or a_shape[1]),
               "b": f.get("stride_b", 0) or b_shape[0] * (ldb or b_shape[1]),
               "c": f.get("stride_c", 0) or m * ldc}
    u = _UNIT_ROUNDOFF[case.ty]
    gamma = (k + 3) * u / (1 - (k + 3) * u)
    tolerance = np.zeros(len(inputs["c"]))
    for item in range(f.get("batch", 1)):
        a = np.abs(_stored(inputs["a"], *a_shape, lda, item * strides["a"]))
        b = np.abs(_stored(inputs["b"], *b_shape, ldb, item * strides["b"]))
        magnitude = abs(alpha) * ((a.T if trans_a else a) @ (b.T if trans_b else b)) if k else np.zeros((m, n))
        for i in range(m):
            for j in range(n):
                position = item * strides["c"] + i * ldc + j
                c_term = abs(beta) * abs(float(inputs["c"][position])) if beta != 0 else 0.0
                tolerance[position] = gamma * (magnitude[i, j] + c_term) + (k + 3) * _SMALLEST_SUBNORMAL[case.ty]
    return tolerance


def compare(case: MatrixCase, inputs: dict, want: np.ndarray, got: np.ndarray) -> list:
    """The elements of C where ``got`` breaks the contract against ``want`` (the reference's): (index, want,
    got, tolerance), empty when it keeps it."""
    tolerance = _tolerance(case, inputs)
    same_bits = want.tobytes() == got.tobytes()
    size = want.itemsize
    bad = []
    for index, (w, g, tol) in enumerate(zip(want.tolist(), got.tolist(), tolerance.tolist())):
        if tol == 0:   # not written: the same bits
            ok = same_bits or want.tobytes()[index * size:(index + 1) * size] == got.tobytes()[index * size:(index + 1) * size]
        elif math.isnan(w) or math.isinf(w):
            ok = (math.isnan(w) and math.isnan(g)) or w == g
        else:
            ok = abs(g - w) <= tol
        if not ok:
            bad.append((index, w, g, tol))
    return bad
