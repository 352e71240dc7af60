"""The op table of the math library: op name -> its kernels, registered with ``@math_kernel``.

A kernel is ``kernel(kb, *args) -> Vec``: given a KernelBuilder of one lane
format and the argument Vecs, it returns the expression of the result
(writing whatever ``let`` statements it needs on the way). Every op has an
f64 kernel; an op without an f32 kernel computes its f32 shapes in f64 lanes
and rounds once at the end ("widened"), which keeps f32 results within one
rounding of the f64 result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from atlas_web.errors import UnsupportedOperation

from .kernel import KernelBuilder, Vec

__all__ = ["MathOp", "MATH_OPS", "math_kernel", "math_op", "KERNEL_FORMATS"]

Kernel = Callable[..., Vec]

#: the lane formats a kernel can be written for
KERNEL_FORMATS = ("f32", "f64")


@dataclass
class MathOp:
    """One op: ``arity`` v128 arguments, ``kernels`` by lane format name, a one-line ``formula``."""

    name: str
    arity: int
    formula: str
    kernels: dict[str, Kernel] = field(default_factory=dict)

    def kernel(self, fmt: str) -> Kernel | None:
        """The kernel written for lane format ``fmt``, or None (f32 then runs widened to f64)."""
        return self.kernels.get(fmt)

    def widened(self, fmt: str) -> bool:
        """Whether ``fmt`` lanes are computed in f64 lanes (no kernel of their own)."""
        return fmt not in self.kernels


#: op name -> MathOp (filled by the kernel modules through ``math_kernel``)
MATH_OPS: dict[str, MathOp] = {}


def math_kernel(op: str, fmt: str, *, arity: int = 1, formula: str = "") -> Callable[[Kernel], Kernel]:
    """Register the decorated function as ``op``'s kernel for lane format ``fmt`` ("f32" or "f64").

    The first registration of an op fixes its arity and formula; raises ValueError for an unknown format,
    a second kernel for the same op and format, or an arity that disagrees.
    """
    if fmt not in KERNEL_FORMATS:
        raise ValueError(f"math kernel {op}: format must be one of {KERNEL_FORMATS}, got {fmt!r}")

    def register(kernel: Kernel) -> Kernel:
        entry = MATH_OPS.setdefault(op, MathOp(op, arity, formula))
        if entry.arity != arity:
            raise ValueError(f"math kernel {op}/{fmt}: arity {arity} disagrees with {entry.arity}")
        if fmt in entry.kernels:
            raise ValueError(f"math kernel {op}/{fmt} is registered twice")
        if formula and not entry.formula:
            entry.formula = formula
        entry.kernels[fmt] = kernel
        return kernel
    return register


def math_op(name: object) -> MathOp:
    """The MathOp called ``name`` (case-insensitive, so Atlas names such as ``"EXP"`` work).

    Raises UnsupportedOperation naming the known ops.
    """
    key = name.lower() if isinstance(name, str) else name
    try:
        return MATH_OPS[key]  # type: ignore[index]
    except (KeyError, TypeError):
        known = ", ".join(sorted(MATH_OPS))
        raise UnsupportedOperation(str(name), "math library", "wasm", f"no such math op (known: {known})") from None


def run_kernel(op: MathOp, kb: KernelBuilder, args: list[Vec]) -> Vec:
    """Apply ``op``'s kernel for ``kb``'s format to ``args``; raises UnsupportedOperation when it has none."""
    kernel = op.kernel(kb.fmt.name)
    if kernel is None:
        raise UnsupportedOperation(op.name, kb.fmt.name, "wasm", "no kernel for this lane format (it runs widened)")
    return kernel(kb, *args)
