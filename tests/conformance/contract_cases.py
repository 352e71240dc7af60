"""Cases for TensorContract (rows of category "contraction"), generated from the row: its types, shapes whose
GEMM reads both operands in place, transposed (either or both) or only after a copy in another axis order (a
middle axis paired, several pairs in an order of neither operand), size-1 axes, odd sizes 1, 3, 17, 63 (257 once
per row), an outer product (no pairs), a full contraction (a one-element output), zero sizes (an empty output;
an empty sum, k = 0), alpha and beta other than their defaults, beta == 0 over an output full of NaN, NaN and
infinities among the inputs; traps (each array one element short).

The expected output is NumPy's, written here: ``np.einsum`` (no BLAS zero skipping) in float64 over the
contract_dims pairs, times alpha, plus beta times the old output, rounded to the type. ``compare`` holds a
backend to the contract's bound (docs/semantics.md, Tensor contraction = Matrix kernels' bound with k the
product of the paired sizes) plus NumPy's own rounding: NaN where NumPy has NaN, the same infinity, otherwise
``|got - want| <= gamma(k + 3) * (|alpha| * sum |a||b| + |beta| * |c|) + (k + 3) * eta``.
"""

from __future__ import annotations

import string

import numpy as np

from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.isa.contraction import output_shape, size

from .matrix_cases import MatrixCase, decode_array, encode_array, fill_inputs, run_with_arrays, short_cases

__all__ = ["CONTRACT_ROWS", "SHAPES", "contract_cases", "trap_cases", "run_contract", "expected", "compare"]

CONTRACT_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "contraction")
#: tag -> (shape_a, shape_b, contract_dims)
SHAPES = {
    "matmul": ((3, 4), (4, 5), ((1, 0),)),
    "3d_by_2d": ((2, 3, 5), (5, 4), ((2, 0),)),              # C[i,j,k] = sum_l A[i,j,l] B[l,k]
    "trans_a": ((5, 3), (5, 4), ((0, 0),)),
    "trans_b": ((3, 5), (4, 5), ((1, 1),)),
    "trans_both": ((5, 2, 3), (4, 5), ((0, 1),)),
    "middle_axis": ((3, 4, 5), (6, 4), ((1, 1),)),          # a copied
    "two_pairs_crossed": ((4, 3, 5), (5, 3, 2), ((2, 0), (1, 1))),
    "two_pairs_copy_b": ((2, 3, 4, 5), (4, 6, 3), ((1, 2), (2, 0))),
    "unit_axes": ((1, 5, 1, 3), (3, 1, 4), ((3, 0),)),
    "outer": ((3, 4), (5,), ()),
    "full": ((3, 4), (3, 4), ((0, 0), (1, 1))),
    "odd_1": ((1,), (1, 1), ((0, 0),)),
    "odd_17x63x3": ((17, 63), (63, 3), ((1, 0),)),
    "odd_63x3x17": ((3, 63), (3, 17), ((0, 0),)),
    "empty_output": ((0, 4), (4, 3), ((1, 0),)),
    "empty_sum": ((3, 0), (0, 4), ((1, 0),)),
}
_UNIT_ROUNDOFF = {Type.F32: 2.0 ** -24, Type.F64: 2.0 ** -53}
_SMALLEST_SUBNORMAL = {Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}


def _fields(shapes: tuple, **extra) -> dict:
    shape_a, shape_b, pairs = shapes
    return dict(shape_a=shape_a, shape_b=shape_b, contract_dims=pairs, **extra)


def contract_cases() -> list[MatrixCase]:
    out = []
    for info in CONTRACT_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            def case(tag, fields, fill="random"):
                out.append(MatrixCase(f"{info.name}.{ty.name}.{tag}", info, ty, fields, fill))
            for tag, shapes in SHAPES.items():
                case(tag, _fields(shapes))
                case(f"{tag}.alpha_beta", _fields(shapes, alpha=-1.5, beta=0.75))
            case("beta0_nan_in_output", _fields(SHAPES["two_pairs_crossed"], alpha=2.0), "nan_c")
            case("nan_inf", _fields(SHAPES["3d_by_2d"], beta=0.5), "specials")
            case("nan_inf_copied", _fields(SHAPES["middle_axis"]), "specials")
            case("empty_sum_beta0", _fields(SHAPES["empty_sum"]), "nan_c")
            if ty is Type.F32:
                case("257", _fields(((257, 257), (257, 257), ((1, 0),)), alpha=0.5, beta=1.0))
    return out


def trap_cases() -> list[MatrixCase]:
    return short_cases(CONTRACT_ROWS, lambda info: _fields(SHAPES["two_pairs_copy_b"], beta=1.0))


def run_contract(backend, case: MatrixCase, seed: int = 11):
    """Run ``case`` on ``backend``: (inputs by array name, the output's bytes afterwards, trap or None)."""
    arrays = case.arrays()
    inputs = fill_inputs(case, seed, "output")
    raw, trap = run_with_arrays(backend, case, arrays, inputs, "output")
    return inputs, raw, trap


def _einsum(a: np.ndarray, b: np.ndarray, fields: dict) -> np.ndarray:
    """sum over the pairs of a (shape_a) times b (shape_b), float64, output axes a's free then b's."""
    shape_a, shape_b, pairs = fields["shape_a"], fields["shape_b"], fields["contract_dims"]
    letters = iter(string.ascii_letters)
    sub_a = [next(letters) for _ in shape_a]
    sub_b = [next(letters) for _ in shape_b]
    for i, j in pairs:
        sub_b[j] = sub_a[i]
    paired_a, paired_b = {i for i, _ in pairs}, {j for _, j in pairs}
    sub_out = [s for x, s in enumerate(sub_a) if x not in paired_a] + [s for x, s in enumerate(sub_b)
                                                                        if x not in paired_b]
    spec = f"{''.join(sub_a)},{''.join(sub_b)}->{''.join(sub_out)}"
    return np.einsum(spec, a.reshape(shape_a), b.reshape(shape_b), optimize=False).reshape(-1)


def _k(fields: dict) -> int:
    return size(tuple(fields["shape_a"][i] for i, _ in fields["contract_dims"]))


def expected(case: MatrixCase, inputs: dict) -> np.ndarray:
    """NumPy's output (float64 values of the type)."""
    f, probe = case.fields, case.probe()
    shape = output_shape(f["shape_a"], f["shape_b"], f["contract_dims"])
    with np.errstate(invalid="ignore", over="ignore"):
        total = probe.alpha * _einsum(inputs["a"], inputs["b"], f) if _k(f) else np.zeros(size(shape))
        if probe.beta != 0:
            total = total + probe.beta * inputs["output"]
    return decode_array(case.ty, encode_array(case.ty, total))


def compare(case: MatrixCase, inputs: dict, raw: bytes) -> list:
    """The output elements where ``raw`` breaks the contract against NumPy: (index, want, got, bound)."""
    f, probe = case.fields, case.probe()
    want, got = expected(case, inputs), decode_array(case.ty, raw)
    k = _k(f)
    u = _UNIT_ROUNDOFF[case.ty]
    gamma = (k + 3) * u / (1 - (k + 3) * u)
    with np.errstate(invalid="ignore"):
        magnitude = abs(probe.alpha) * _einsum(np.abs(inputs["a"]), np.abs(inputs["b"]), f) if k else 0.0
        c_term = abs(probe.beta) * np.abs(inputs["output"]) if probe.beta != 0 else 0.0
        bound = gamma * (magnitude + c_term) + (k + 3) * _SMALLEST_SUBNORMAL[case.ty]
        special = np.isnan(want) | np.isinf(want)
        ok = np.where(special, (np.isnan(want) & np.isnan(got)) | (want == got), np.abs(got - want) <= bound)
    bound = np.broadcast_to(bound, want.shape)
    return [(int(i), float(want[i]), float(got[i]), float(bound[i])) for i in np.flatnonzero(~ok)]
