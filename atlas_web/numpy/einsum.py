"""``einsum``: NumPy's Einstein summation over the array operations.

Operands are combined left to right, two at a time: labels only one side has and nothing later needs
are summed first (``sum`` over those axes); of the labels both sides have, those still needed (the
output's, or a later operand's) are batch axes and the others are contracted. Without batch labels,
float32/float64 pairs run the TensorContract instruction where the device supports it (operands in
place, no copies here). Otherwise both operands are transposed to (batch, own free, contracted) /
(batch, contracted, own free), reshaped to three axes and multiplied with ``matmul`` (float32/float64:
one GEMM, or BatchedGEMM with batch labels), and the product reshaped back. A single operand is summed and transposed. Explicit (``ij,jk->ik``) and implicit
(``ij,jk``: the labels seen once, sorted) output. Standard library only.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArrayError
from ..isa.types import Type
from .array import Array
from .creation import asarray
from .elementwise import common_device

__all__ = ["einsum"]


def _parse(subscripts: str, operands: tuple[Array, ...]) -> tuple[list[str], str]:
    what = f"einsum({subscripts!r}, {', '.join(a.describe() for a in operands)})"
    text = subscripts.replace(" ", "")
    if "." in text:
        raise ArrayError(f"{what}: '...' is not supported; name every axis")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ArrayError(f"{what}: {len(terms)} terms for {len(operands)} operands")
    for term, a in zip(terms, operands):
        if not term.isalpha() and term:
            raise ArrayError(f"{what}: subscripts are letters, got {term!r}")
        if len(term) != a.ndim:
            raise ArrayError(f"{what}: term {term!r} names {len(term)} axes of an array of {a.ndim}")
        if len(set(term)) != len(term):
            raise ArrayError(f"{what}: a label repeated in one term ({term!r}: a diagonal) is not supported")
    sizes: dict[str, int] = {}
    for term, a in zip(terms, operands):
        for label, n in zip(term, a.shape):
            if sizes.setdefault(label, n) != n:
                raise ArrayError(f"{what}: label {label!r} has sizes {sizes[label]} and {n}")
    if not arrow:
        counts = {label: inputs.count(label) for label in sizes}
        output = "".join(sorted(label for label, c in counts.items() if c == 1))
    if len(set(output)) != len(output) or not set(output) <= set(sizes):
        raise ArrayError(f"{what}: the output {output!r} repeats a label or names one no input has")
    return terms, output


def _sum_out(a: Array, term: str, keep: set[str]) -> tuple[Array, str]:
    """``a`` summed over the labels of ``term`` not in ``keep``."""
    axes = tuple(i for i, label in enumerate(term) if label not in keep)
    if not axes:
        return a, term
    return a.sum(axis=axes), "".join(label for label in term if label in keep)


def _product(a: Array, ta: str, b: Array, tb: str, keep: set[str]) -> tuple[Array, str]:
    """The product of two operands keeping the labels in ``keep`` (see the module's docstring)."""
    from .linalg import matmul
    a, ta = _sum_out(a, ta, keep | set(tb))
    b, tb = _sum_out(b, tb, keep | set(ta))
    batch = [label for label in ta if label in tb and label in keep]
    contracted = [label for label in ta if label in tb and label not in keep]
    free_a = [label for label in ta if label not in tb]
    free_b = [label for label in tb if label not in ta]
    size = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))

    def total(labels: list[str]) -> int:
        n = 1
        for label in labels:
            n *= size[label]
        return n
    if not batch:
        contracted_product = _tensor_contract(a, ta, b, tb, contracted)
        if contracted_product is not None:
            return contracted_product
    a3 = a.transpose([ta.index(x) for x in batch + free_a + contracted]) if a.ndim else a
    b3 = b.transpose([tb.index(x) for x in batch + contracted + free_b]) if b.ndim else b
    a3 = a3.reshape(total(batch), total(free_a), total(contracted))
    b3 = b3.reshape(total(batch), total(contracted), total(free_b))
    out = matmul(a3, b3).reshape(tuple(size[x] for x in batch + free_a + free_b))
    return out, "".join(batch + free_a + free_b)


#: the most axes a TensorContract shape holds (its DIMS operand)
_MAX_RANK = 8


def _tensor_contract(a: Array, ta: str, b: Array, tb: str, contracted: list[str]) -> tuple[Array, str] | None:
    """The TensorContract instruction computing the pair (output axes: a's free labels, then b's) where
    the device supports it for the promoted float type and the ranks fit; None otherwise."""
    from .elementwise import result_type
    from .nn import launch_kernel
    ty, _ = result_type("einsum", (a, b))
    if (ty not in (Type.F32, Type.F64) or not 0 < a.ndim <= _MAX_RANK or not 0 < b.ndim <= _MAX_RANK
            or not a.device.supports("TensorContract", ty)):
        return None
    a = a if a.dtype == ty and not a.is_bool else a.astype(ty)
    b = b if b.dtype == ty and not b.is_bool else b.astype(ty)
    free = [x for x in ta if x not in contracted] + [x for x in tb if x not in contracted]
    size = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    pairs = " ".join(f"{ta.index(x)}:{tb.index(x)}" for x in contracted)
    text = (f"tcontract.{ty.suffix} [{{out}}], [{{a0}}], [{{a1}}], ({' '.join(map(str, a.shape))}), "
            f"({' '.join(map(str, b.shape))}), ({pairs}), 1.0, 0.0")
    what = f"einsum pair {ta},{tb}->{''.join(free)} ({a.describe()}, {b.describe()})"
    return launch_kernel(text, tuple(size[x] for x in free), [a, b], what), "".join(free)


def einsum(subscripts: str, *operands: Any) -> Array:
    """NumPy's ``einsum`` for explicit or implicit output without ``...`` or repeated labels in one term.
    Raises ArrayError for subscripts that do not fit the operands (naming both)."""
    if not operands:
        raise ArrayError("einsum needs at least one operand")
    device = next((a.device for a in operands if isinstance(a, Array)), None)
    arrays = tuple(asarray(a, device=device) for a in operands)
    common_device("einsum", list(arrays))
    terms, output = _parse(subscripts, arrays)
    result, term = arrays[0], terms[0]
    for k in range(1, len(arrays)):
        later = set(output).union(*terms[k + 1:])
        result, term = _product(result, term, arrays[k], terms[k], later)
    result, term = _sum_out(result, term, set(output))
    if term != output:
        result = result.transpose([term.index(x) for x in output])
    return result
