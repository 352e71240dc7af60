"""VecBuilder: writes branch-free v128 lane arithmetic into a function as small expression trees.

A ``Vec`` is an expression that leaves one v128 on the wasm stack. Nothing is
written when a Vec is made; it is written where it is used, and again at
every further use, so a value needed twice is first stored with ``let``
(which writes it into a fresh v128 local at that point and returns a Vec
that reads the local). Float arithmetic on Vecs uses Python operators
(``a * b + 1.0``; plain numbers become splatted constants); integer lane
arithmetic, comparisons and bit operations are methods of the builder.

Every operation is one WebAssembly SIMD instruction of the builder's lane
format (``f32x4``/``i32x4`` or ``f64x2``/``i64x2``). Relaxed SIMD appears
only in ``madd`` and only when the builder is made with ``relaxed_madd``;
otherwise results are the same on every engine. A one-lane format
(``FORMAT_F64_SCALAR``) writes the plain f64 instructions instead, for
scalar helper code (float operations only: scalar wasm types its values, so
bit operations on floats need explicit reinterprets there). Raises
WasmEncodingError (from the code writer) for an instruction the format lacks.

``helpers`` (given by the MathLibrary) emits shared helper functions once
per module; routines ask for them with ``helper``.
"""

from __future__ import annotations

from typing import Callable, Protocol

from ..encoding.body_writer import BodyWriter
from ..encoding.module import FunctionBuilder
from ..encoding.types import ValType
from ..errors import WasmEncodingError
from .shapes import LaneFormat

__all__ = ["Vec", "VecBuilder", "HelperProvider"]


class HelperProvider(Protocol):
    """Emits a named helper function once per module and returns its index."""

    def helper(self, name: str, params: tuple[ValType, ...], results: tuple[ValType, ...],
               write_body: Callable[[FunctionBuilder], None]) -> int: ...

Operand = "Vec | float | int"


class Vec:
    """One v128 expression of a VecBuilder; float operators build float lane arithmetic."""

    __slots__ = ("kb", "write", "local_index")

    def __init__(self, kb: "VecBuilder", write: Callable[[BodyWriter], None],
                 local_index: int | None = None) -> None:
        self.kb = kb
        self.write = write
        self.local_index = local_index    # set when the Vec reads a local (``let``, ``local``)

    def __add__(self, other: Operand) -> "Vec":
        return self.kb.fop("add", self, other)

    def __radd__(self, other: Operand) -> "Vec":
        return self.kb.fop("add", other, self)

    def __sub__(self, other: Operand) -> "Vec":
        return self.kb.fop("sub", self, other)

    def __rsub__(self, other: Operand) -> "Vec":
        return self.kb.fop("sub", other, self)

    def __mul__(self, other: Operand) -> "Vec":
        return self.kb.fop("mul", self, other)

    def __rmul__(self, other: Operand) -> "Vec":
        return self.kb.fop("mul", other, self)

    def __truediv__(self, other: Operand) -> "Vec":
        return self.kb.fop("div", self, other)

    def __rtruediv__(self, other: Operand) -> "Vec":
        return self.kb.fop("div", other, self)

    def __neg__(self) -> "Vec":
        return self.kb.fop("neg", self)


class VecBuilder:
    """Writes lane arithmetic of one ``LaneFormat`` into ``function``'s body (see the module docstring)."""

    def __init__(self, function: FunctionBuilder, fmt: LaneFormat, helpers: "HelperProvider | None" = None, *,
                 relaxed_madd: bool = False) -> None:
        self.function = function
        self.fmt = fmt
        self.w = function.code
        self.helpers = helpers
        self.relaxed_madd = relaxed_madd and fmt.is_vector
        self.locals_made = 0

    def helper(self, name: str, params: tuple[ValType, ...], results: tuple[ValType, ...],
               write_body: Callable[[FunctionBuilder], None]) -> int:
        """The index of the shared helper function ``name`` (emitted by ``write_body`` on first use).

        Raises WasmEncodingError when the builder has no helper provider.
        """
        if self.helpers is None:
            raise WasmEncodingError(f"routine needs helper function {name!r}, but its VecBuilder has no "
                                    "helper provider (build it through MathLibrary)")
        return self.helpers.helper(name, params, results, write_body)

    # --- leaves and statements -----------------------------------------------------------------------------

    def local(self, index: int) -> Vec:
        """The local (or parameter) ``index`` (v128, or the scalar type of a one-lane format)."""
        return Vec(self, lambda w: w.local_get(index), index)

    def const(self, value: float) -> Vec:
        """``value`` (rounded to the lane format) in every lane."""
        if not self.fmt.is_vector:
            rounded = self.fmt.round(float(value))
            return Vec(self, lambda w: w.emit(f"{self.fmt.name}.const", rounded))
        data = self.fmt.splat_float(value)
        return Vec(self, lambda w: w.v128_const(data))

    def iconst(self, value: int) -> Vec:
        """The integer (or bit pattern) ``value``, wrapped to the lane width, in every lane (vectors only)."""
        if not self.fmt.is_vector:
            raise WasmEncodingError("integer lane constants need a vector format; scalar helpers write ints directly")
        data = self.fmt.splat_int(value)
        return Vec(self, lambda w: w.v128_const(data))

    def let(self, value: Operand) -> Vec:
        """Write ``value`` now into a new local; returns a Vec reading that local."""
        vec = self.vec(value)
        index = self.function.add_local(self.fmt.valtype)
        self.locals_made += 1
        vec.write(self.w)
        self.w.local_set(index)
        return self.local(index)

    def variable(self) -> Vec:
        """A new local, not yet written (give it a value with ``assign`` on every path before reading it)."""
        index = self.function.add_local(self.fmt.valtype)
        self.locals_made += 1
        return self.local(index)

    def assign(self, target: Vec, value: Operand) -> None:
        """Write ``value`` now into the local that ``target`` (a ``let`` or ``local`` Vec) reads."""
        if target.local_index is None:
            raise WasmEncodingError("assign needs a Vec that reads a local (made by let or local)")
        self.vec(value).write(self.w)
        self.w.local_set(target.local_index)

    def emit(self, value: Operand) -> None:
        """Write ``value`` now, leaving it on the stack."""
        self.vec(value).write(self.w)

    def vec(self, value: Operand) -> Vec:
        """``value`` as a Vec: Vecs pass through, numbers become float constants."""
        if isinstance(value, Vec):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.const(float(value))
        raise TypeError(f"a routine operand must be a Vec or a number, got {type(value).__name__}")

    # --- instruction nodes ---------------------------------------------------------------------------------

    def node(self, name: str, *operands: Operand, after: Callable[[BodyWriter], None] | None = None) -> Vec:
        """The instruction ``name`` applied to ``operands`` (written first to last); ``after`` writes more
        operands (such as a shift count) just before the instruction."""
        vecs = [self.vec(op) for op in operands]

        def write(w: BodyWriter) -> None:
            for v in vecs:
                v.write(w)
            if after is not None:
                after(w)
            w.emit(name)
        return Vec(self, write)

    def fop(self, op: str, *operands: Operand) -> Vec:
        """Float lane instruction ``op`` (``add``, ``sqrt``, ``lt``, ...) of the builder's format."""
        return self.node(f"{self.fmt.float_prefix}.{op}", *operands)

    def iop(self, op: str, *operands: Operand) -> Vec:
        """Integer lane instruction ``op`` (``add``, ``eq``, ``gt_s``, ...) of the same lane width."""
        return self.node(f"{self.fmt.int_prefix}.{op}", *operands)

    # --- float helpers ---------------------------------------------------------------------------------------

    def madd(self, a: Operand, b: Operand, c: Operand) -> Vec:
        """``a*b + c``: two roundings, or with ``relaxed_madd`` the relaxed SIMD instruction, which an engine
        may fuse (one rounding) or not (then it is exactly the two-rounding form). Routines use it only where
        either result keeps them within their published bound (tests run both forms)."""
        if self.relaxed_madd:
            return self.node(f"{self.fmt.float_prefix}.relaxed_madd", a, b, c)
        return self.fop("add", self.fop("mul", a, b), c)

    def sqrt(self, a: Operand) -> Vec:
        return self.fop("sqrt", a)

    def abs(self, a: Operand) -> Vec:
        return self.fop("abs", a)

    def nearest(self, a: Operand) -> Vec:
        return self.fop("nearest", a)

    def trunc(self, a: Operand) -> Vec:
        return self.fop("trunc", a)

    def pmin(self, a: Operand, b: Operand) -> Vec:
        """``b < a ? b : a``: one instruction; keeps ``a`` when either is NaN (so NaN in ``a`` survives)."""
        return self.fop("pmin", a, b)

    def pmax(self, a: Operand, b: Operand) -> Vec:
        """``a < b ? b : a``: one instruction; keeps ``a`` when either is NaN."""
        return self.fop("pmax", a, b)

    def eq(self, a: Operand, b: Operand) -> Vec:
        return self.fop("eq", a, b)

    def ne(self, a: Operand, b: Operand) -> Vec:
        return self.fop("ne", a, b)

    def lt(self, a: Operand, b: Operand) -> Vec:
        return self.fop("lt", a, b)

    def le(self, a: Operand, b: Operand) -> Vec:
        return self.fop("le", a, b)

    def gt(self, a: Operand, b: Operand) -> Vec:
        return self.fop("gt", a, b)

    def ge(self, a: Operand, b: Operand) -> Vec:
        return self.fop("ge", a, b)

    def is_nan(self, a: Operand) -> Vec:
        return self.fop("ne", a, a)

    # --- integer lanes and bits ------------------------------------------------------------------------------

    def iadd(self, a: Operand, b: Operand) -> Vec:
        return self.iop("add", a, b)

    def isub(self, a: Operand, b: Operand) -> Vec:
        return self.iop("sub", a, b)

    def ieq(self, a: Operand, b: Operand) -> Vec:
        return self.iop("eq", a, b)

    def igt_s(self, a: Operand, b: Operand) -> Vec:
        return self.iop("gt_s", a, b)

    def ilt_s(self, a: Operand, b: Operand) -> Vec:
        return self.iop("lt_s", a, b)

    def shl(self, a: Operand, count: int) -> Vec:
        return self.node(f"{self.fmt.int_prefix}.shl", a, after=lambda w: w.i32_const(count))

    def shr_s(self, a: Operand, count: int) -> Vec:
        return self.node(f"{self.fmt.int_prefix}.shr_s", a, after=lambda w: w.i32_const(count))

    def shr_u(self, a: Operand, count: int) -> Vec:
        return self.node(f"{self.fmt.int_prefix}.shr_u", a, after=lambda w: w.i32_const(count))

    def and_(self, a: Operand, b: Operand) -> Vec:
        return self.node("v128.and", a, b)

    def or_(self, a: Operand, b: Operand) -> Vec:
        return self.node("v128.or", a, b)

    def xor(self, a: Operand, b: Operand) -> Vec:
        return self.node("v128.xor", a, b)

    def andnot(self, a: Operand, b: Operand) -> Vec:
        """``a & ~b``."""
        return self.node("v128.andnot", a, b)

    def not_(self, a: Operand) -> Vec:
        return self.node("v128.not", a)

    def select(self, mask: Operand, if_set: Operand, if_clear: Operand) -> Vec:
        """Per bit: ``if_set`` where ``mask`` is 1, else ``if_clear`` (masks come from comparisons)."""
        return self.node("v128.bitselect", if_set, if_clear, mask)

    # --- sign bits -------------------------------------------------------------------------------------------

    @property
    def sign_bit(self) -> Vec:
        return self.iconst(1 << (self.fmt.bits - 1))

    def sign_of(self, a: Operand) -> Vec:
        """Only the sign bit of each lane of ``a``."""
        return self.and_(a, self.sign_bit)

    def copysign(self, magnitude: Operand, sign_source: Operand) -> Vec:
        """``magnitude`` (non-negative) with the sign bit of ``sign_source``."""
        return self.or_(magnitude, self.sign_of(sign_source))

    def flip_sign(self, a: Operand, sign_bits: Operand) -> Vec:
        """``a`` with its sign bit flipped where ``sign_bits`` has it set."""
        return self.xor(a, sign_bits)
