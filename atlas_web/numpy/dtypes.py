"""Element types of arrays: names, NumPy's promotion rules, and the defaults for Python data.

An array's ``dtype`` is an atlas ``Type`` (F16, F32, F64, the integers of 8 to 64 bits). ``bool`` is
stored as U8 holding 0 or 1 with the array marked boolean (comparisons give it), so the same bytes run
everywhere. ``as_dtype`` accepts a ``Type``, a NumPy dtype (or scalar type) or a name such as
``"float32"``; promotion follows NumPy 2 (NEP 50: a Python scalar takes the array's type where its kind
fits). Standard library only.
"""

from __future__ import annotations

from ..errors import ArrayError
from ..isa.types import Type

__all__ = [
    "DTYPES", "as_dtype", "dtype_name", "promote", "promote_scalar", "float_for", "sum_type", "BOOL",
    "DEFAULT_FLOAT", "DEFAULT_INT",
]

#: the storage type of a boolean array (0 or 1 per element)
BOOL = Type.U8
#: the type of Python floats put in an array without a dtype (as in JAX and PyTorch: every backend has it)
DEFAULT_FLOAT = Type.F32
#: the type of Python ints put in an array without a dtype
DEFAULT_INT = Type.I32

#: NumPy's name of each array element type
DTYPES: dict[str, Type] = {
    "float16": Type.F16, "float32": Type.F32, "float64": Type.F64,
    "int8": Type.I8, "int16": Type.I16, "int32": Type.I32, "int64": Type.I64,
    "uint8": Type.U8, "uint16": Type.U16, "uint32": Type.U32, "uint64": Type.U64,
}
_NAMES = {ty: name for name, ty in DTYPES.items()}
_ALIASES = {"half": Type.F16, "single": Type.F32, "double": Type.F64, "float": Type.F64, "int": Type.I64,
            **{ty.suffix: ty for ty in DTYPES.values()}}


def as_dtype(dtype: object, what: str = "dtype") -> tuple[Type, bool]:
    """``(Type, is_bool)`` named by ``dtype``: a Type, a name ("float32", "f32", "bool"), a NumPy dtype
    or scalar type. Raises ArrayError naming ``what`` for anything else (BF16 and the extended integers
    have no array form)."""
    if isinstance(dtype, Type):
        if dtype in _NAMES:
            return dtype, False
        raise ArrayError(f"{what}: {dtype.name} has no array form (types: {', '.join(DTYPES)})")
    if dtype is bool:
        return BOOL, True
    if dtype is float:
        return Type.F64, False
    if dtype is int:
        return Type.I64, False
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if name is None and isinstance(dtype, type):  # a NumPy scalar type such as np.float32
        name = getattr(dtype, "__name__", None)
    if isinstance(name, str):
        if name in ("bool", "bool_", "b1"):
            return BOOL, True
        ty = DTYPES.get(name) or _ALIASES.get(name)
        if ty is not None:
            return ty, False
    raise ArrayError(f"{what}: {dtype!r} is not an array element type (types: bool, {', '.join(DTYPES)})")


def dtype_name(ty: Type, is_bool: bool = False) -> str:
    """NumPy's name of ``ty`` ("bool" for a boolean array)."""
    return "bool" if is_bool else _NAMES[ty]


def float_for(ty: Type) -> Type:
    """The float type NumPy computes a float function of ``ty`` in (``exp`` of int16 is float32)."""
    if ty.is_float():
        return ty
    return {8: Type.F16, 16: Type.F32}.get(ty.bits, Type.F64)


def _int_of(signed: bool, bits: int) -> Type:
    return DTYPES[("int" if signed else "uint") + str(bits)]


def promote(a: tuple[Type, bool], b: tuple[Type, bool]) -> tuple[Type, bool]:
    """NumPy's result type of two array element types (``(Type, is_bool)`` each)."""
    (ta, ba), (tb, bb) = a, b
    if ba and bb:
        return BOOL, True
    if ba:
        return tb, False
    if bb:
        return ta, False
    if ta == tb:
        return ta, False
    if ta.is_float() and tb.is_float():
        return (ta if ta.bits >= tb.bits else tb), False
    if ta.is_float() or tb.is_float():
        flt, other = (ta, tb) if ta.is_float() else (tb, ta)
        need = float_for(other)
        return (flt if flt.bits >= need.bits else need), False
    if ta.is_signed() == tb.is_signed():
        return (ta if ta.bits >= tb.bits else tb), False
    signed, unsigned = (ta, tb) if ta.is_signed() else (tb, ta)
    if signed.bits > unsigned.bits:
        return signed, False
    if unsigned.bits == 64:
        return Type.F64, False
    return _int_of(True, unsigned.bits * 2), False


def promote_scalar(a: tuple[Type, bool], value: object) -> tuple[Type, bool]:
    """The result type of an array of type ``a`` with the Python scalar ``value`` (NEP 50: the scalar is
    weak; a float with an integer array gives float64, as NumPy does). Raises ArrayError for a value that
    is not a number."""
    ty, is_bool = a
    if isinstance(value, bool):
        return a
    if isinstance(value, int):
        return (DEFAULT_INT if is_bool else ty), False
    if isinstance(value, float):
        return (ty if ty.is_float() and not is_bool else Type.F64), False
    raise ArrayError(f"{value!r} is not a number (a Python bool, int or float) or an Array")


def sum_type(ty: Type, is_bool: bool) -> Type:
    """The type NumPy sums (and multiplies) ``ty`` in: integers widened to 64 bits."""
    if is_bool or (ty.is_integer() and ty.is_signed()):
        return Type.I64
    if ty.is_integer():
        return Type.U64
    return ty
