"""Storage of every ISA type in NumPy arrays, rounding to the float formats, and memory (de)serialization.

Storage dtypes: F16 -> float16; BF16 -> float32 holding bfloat16-representable
values; F32, F64 and the integers up to 64 bits -> their native dtype; the
extended integers (I128 … U4096) -> object arrays of Python ints holding the
canonical wrapped value of the type (signed types hold negative values).

Rounding is to nearest, ties to even, everywhere. Two flavours exist because
the semantics contract asks for both: ``round_to`` rounds an f64 result to
F16/BF16 *through f32* (the rule for transcendentals), ``round_once`` rounds
an f64 value directly to the format (conversions), using round-to-odd to f32
as an intermediate step, which is exact for any format of at most 22 bits.
"""

from __future__ import annotations

import numpy as np

from ..errors import ProgramError
from ..isa.types import Type

__all__ = [
    "storage_dtype", "compute_dtype", "zeros", "constant", "round_to", "round_once", "to_compute",
    "load", "store", "as_type", "to_unsigned_index", "unsigned_view", "object_array", "wrap_objects",
    "round_f32_to_bf16", "round_f64_to_f32_odd", "unsigned_dtype_of", "in_chunks", "CHUNK_LANES",
]

_NATIVE: dict[Type, np.dtype] = {
    Type.F16: np.dtype(np.float16), Type.BF16: np.dtype(np.float32), Type.F32: np.dtype(np.float32),
    Type.F64: np.dtype(np.float64),
    Type.I8: np.dtype(np.int8), Type.I16: np.dtype(np.int16), Type.I32: np.dtype(np.int32),
    Type.I64: np.dtype(np.int64),
    Type.U8: np.dtype(np.uint8), Type.U16: np.dtype(np.uint16), Type.U32: np.dtype(np.uint32),
    Type.U64: np.dtype(np.uint64),
}
_OBJECT: np.dtype = np.dtype(object)
_UNSIGNED_BY_SIZE: dict[int, np.dtype] = {
    1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
_LITTLE = {Type.F16: "<f2", Type.F32: "<f4", Type.F64: "<f8", Type.I8: "i1", Type.I16: "<i2", Type.I32: "<i4",
           Type.I64: "<i8", Type.U8: "u1", Type.U16: "<u2", Type.U32: "<u4", Type.U64: "<u8"}
_F32_MAX = np.float32(np.finfo(np.float32).max)


#: lanes per chunk of the multi-step rules: their temporaries then stay in cache (4x faster at a million lanes)
CHUNK_LANES = 1 << 14


def in_chunks(fn, out_dtype, *arrays: np.ndarray) -> np.ndarray:
    """``fn(*arrays)`` computed CHUNK_LANES lanes at a time into one new array of ``out_dtype``.

    For element-wise functions built of many NumPy steps; the result equals ``fn(*arrays)``.
    """
    n = len(arrays[0])
    if n <= CHUNK_LANES:
        return np.asarray(fn(*arrays), dtype=out_dtype)
    out = np.empty(n, dtype=out_dtype)
    for start in range(0, n, CHUNK_LANES):
        stop = start + CHUNK_LANES
        out[start:stop] = fn(*(a[start:stop] for a in arrays))
    return out


def storage_dtype(ty: Type) -> np.dtype:
    """The NumPy dtype that holds values of ``ty`` (object for the extended integers)."""
    return _OBJECT if ty.is_extended() else _NATIVE[ty]


def compute_dtype(ty: Type) -> np.dtype:
    """The dtype float arithmetic of ``ty`` is computed in: f32 for F16/BF16, else the storage dtype."""
    if ty is Type.F16:
        return _NATIVE[Type.F32]
    return storage_dtype(ty)


def unsigned_dtype_of(dtype: np.dtype) -> np.dtype:
    """The unsigned integer dtype of the same size as the integer dtype ``dtype``."""
    return _UNSIGNED_BY_SIZE[np.dtype(dtype).itemsize]


def unsigned_view(values: np.ndarray) -> np.ndarray:
    """The bits of an integer array read as unsigned of the same width (a view, no copy)."""
    return values.view(unsigned_dtype_of(values.dtype))


def object_array(items, n: int | None = None) -> np.ndarray:
    """A 1-D object array of the Python objects in ``items`` (an iterable); copies them in once."""
    if n is None:
        items = list(items)
        n = len(items)
    return np.fromiter(items, dtype=object, count=n)


def wrap_objects(ty: Type, values: np.ndarray) -> np.ndarray:
    """Python ints wrapped to the integer type ``ty`` (two's complement), as a new object array."""
    bits = ty.bits
    mask = (1 << bits) - 1
    if ty.is_signed():
        half = 1 << (bits - 1)
        return object_array((((v + half) & mask) - half for v in values.tolist()), len(values))
    return object_array((v & mask for v in values.tolist()), len(values))


def zeros(ty: Type, n: int) -> np.ndarray:
    """``n`` zeros of ``ty`` in its storage dtype (Python int 0 for the extended integers)."""
    return np.zeros(n, dtype=storage_dtype(ty))


def constant(ty: Type, value: int | float, n: int) -> np.ndarray:
    """``n`` copies of a normalized MOV_IMM immediate of ``ty`` (already rounded or wrapped to ``ty``)."""
    if ty.is_extended():
        out = np.empty(n, dtype=_OBJECT)
        out[:] = int(value) if n else 0
        return out
    return np.full(n, value, dtype=storage_dtype(ty))


def round_f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to bfloat16 (nearest, ties to even), as a new f32 array; NaN stays a quiet NaN, sign kept."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    rounded = bits >> np.uint32(16)
    rounded &= np.uint32(1)
    rounded += np.uint32(0x7FFF)
    rounded += bits  # a carry into the exponent gives the next binade, or inf, exactly as rounding should
    rounded &= np.uint32(0xFFFF0000)
    nan = np.isnan(x)
    if nan.any():
        rounded[nan] = (bits[nan] & np.uint32(0xFFFF0000)) | np.uint32(0x00400000)
    return rounded.view(np.float32)


def round_f64_to_f32_odd(x: np.ndarray) -> np.ndarray:
    """f64 values rounded to f32 *to odd*: exact values stay, inexact ones get the neighbour with an odd last bit.

    Finite values beyond the f32 range give ±FLT_MAX (odd), so a later
    rounding of at most 22 significant bits overflows exactly when it should.
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        inexact = back != x  # NaN compares unequal too
        inexact &= ~np.isnan(x)
        if not inexact.any():
            return f
        idx = np.flatnonzero(inexact)
        few, wanted = f[idx], x[idx]
        overflow = np.isinf(few)
        few = np.where(overflow, np.copysign(_F32_MAX, wanted).astype(np.float32), few)
        bits = few.view(np.uint32)
        even = (bits & np.uint32(1)) == 0
        # the odd neighbour on x's side is one step up in magnitude when |x| > |f|, else one step down
        up = np.abs(wanted) > np.abs(few.astype(np.float64))
        step = np.where(up, np.uint32(1), np.uint32(0xFFFFFFFF))  # +1 or -1, modulo 2**32
        f[idx] = np.where(even, bits + step, bits).view(np.float32)
    return f


def round_to(ty: Type, values: np.ndarray) -> np.ndarray:
    """An f32 or f64 array rounded to the float type ``ty``, in its storage dtype (a new array).

    From f64, F16 and BF16 round through f32 (f64 -> f32 -> format), the
    contract's rule for results computed in binary64.
    """
    values = np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if ty is Type.F64:
            return values.astype(np.float64)
        f32 = values.astype(np.float32)
        if ty is Type.F32:
            return f32
        if ty is Type.F16:
            return f32.astype(np.float16)
        if ty is Type.BF16:
            return round_f32_to_bf16(f32)
    raise ProgramError(f"round_to: {ty.name} is not a float type")


def round_once(ty: Type, values: np.ndarray) -> np.ndarray:
    """An f64 array rounded once, to nearest even, to the float type ``ty`` (a new array in its storage dtype)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if ty is Type.F64:
            return values.copy()
        if ty is Type.F32:
            return values.astype(np.float32)
        if ty is Type.F16:
            return round_f64_to_f32_odd(values).astype(np.float16)
        if ty is Type.BF16:
            return round_f32_to_bf16(round_f64_to_f32_odd(values))
    raise ProgramError(f"round_once: {ty.name} is not a float type")


def to_compute(ty: Type, values: np.ndarray) -> np.ndarray:
    """Float values of ``ty`` in the dtype their arithmetic is computed in (F16 widened exactly to f32)."""
    return values.astype(np.float32) if ty is Type.F16 else values


def _check_raw(ty: Type, raw: np.ndarray) -> np.ndarray:
    raw = np.asarray(raw)
    size = ty.size_bytes()
    if raw.dtype != np.uint8 or raw.ndim != 2 or raw.shape[1] != size:
        raise ProgramError(f"load {ty.name}: raw bytes must be a uint8 array of shape (n, {size}), "
                           f"got {raw.dtype} {raw.shape}")
    return np.ascontiguousarray(raw)


def load(ty: Type, raw: np.ndarray) -> np.ndarray:
    """Values of ``ty`` decoded from little-endian bytes ``raw`` of shape (n, size); copies into a new array.

    Raises ProgramError when ``raw`` is not a uint8 array of that shape.
    """
    raw = _check_raw(ty, raw)
    n = raw.shape[0]
    if ty.is_extended():
        signed = ty.is_signed()
        size = ty.size_bytes()
        blob = raw.tobytes()
        return object_array((int.from_bytes(blob[i * size:(i + 1) * size], "little", signed=signed)
                             for i in range(n)), n)
    if ty is Type.BF16:
        half = raw.view("<u2").reshape(n).astype(np.uint32) << np.uint32(16)
        return half.view(np.float32)
    return raw.view(_LITTLE[ty]).reshape(n).astype(storage_dtype(ty))


def store(ty: Type, values: np.ndarray) -> np.ndarray:
    """Little-endian bytes of ``values`` (of ``ty``), a new uint8 array of shape (n, size)."""
    values = np.asarray(values)
    n = values.shape[0]
    size = ty.size_bytes()
    if ty.is_extended():
        signed = ty.is_signed()
        blob = b"".join(int(v).to_bytes(size, "little", signed=signed) for v in values.tolist())
        return np.frombuffer(blob, dtype=np.uint8).reshape(n, size).copy()
    if ty is Type.BF16:
        bits = (np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) >> np.uint32(16)).astype("<u2")
        return bits.view(np.uint8).reshape(n, 2).copy()
    return np.ascontiguousarray(values, dtype=_LITTLE[ty]).view(np.uint8).reshape(n, size).copy()


def as_type(values: np.ndarray, from_ty: Type, to_ty: Type) -> np.ndarray:
    """Integer values of ``from_ty`` reinterpreted as the same-width integer type ``to_ty``.

    For native integers the result is a view (no copy); for the extended
    integers a new object array of re-wrapped Python ints. Raises ProgramError
    unless both are integer types of the same width.
    """
    if not (from_ty.is_integer() and to_ty.is_integer() and from_ty.bits == to_ty.bits):
        raise ProgramError(f"as_type: cannot reinterpret {from_ty.name} as {to_ty.name} "
                           "(only integers of the same width)")
    if from_ty is to_ty:
        return values
    if to_ty.is_extended():
        return wrap_objects(to_ty, values)
    return values.view(_NATIVE[to_ty])


def to_unsigned_index(values: np.ndarray, ty: Type) -> np.ndarray:
    """Integer values of ``ty`` read as unsigned of its width: uint64 for up to 64 bits, else an object array.

    Returns a new array. Raises ProgramError for a float type.
    """
    if not ty.is_integer():
        raise ProgramError(f"to_unsigned_index: {ty.name} is not an integer type")
    if ty.is_extended():
        mask = (1 << ty.bits) - 1
        return object_array((v & mask for v in values.tolist()), len(values))
    return values.view(_UNSIGNED_BY_SIZE[ty.size_bytes()]).astype(np.uint64)
