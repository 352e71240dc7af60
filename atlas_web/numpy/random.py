"""``atlas_web.numpy.random``: a counter-based random generator that gives the same numbers on every
backend.

Element ``i`` of a draw is a function of ``(key, i)`` only: 32-bit words ``word(c) = H(H(c ^ k0) ^ k1)``
of a counter ``c``, where ``H`` is the *lowbias32* integer hash (``x ^= x >> 16; x *= 0x7feb352d;
x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16``, wrapping u32) and ``(k0, k1)`` the key. Integer
arithmetic is exact on every backend, so the words, and the uniform floats made from them with exact
steps, are bit for bit the same everywhere:

* ``uniform``: float32 (and float16, rounded from it) ``u = (word(i) >> 8) * 2**-24``; float64
  ``u = ((word(2i) >> 5) * 2**26 + (word(2i+1) >> 6)) * 2**-53``; then ``low + (high - low) * u``.
* ``normal``: Box-Muller from ``u1 = word(2i)``, ``u2 = word(2i+1)`` (as float32 uniforms; float64 as the
  float64 uniform of words 4i..4i+3), ``z = sqrt(-2 log(1 - u1)) * cos(2 pi u2)``, then ``loc + scale * z``:
  the same on every backend within the backend's documented accuracy of log, cos and sqrt.

Keys: ``key(seed)`` (splitmix64 of the seed), ``split(key, n)``. Without ``key=`` a draw takes the next key
of a module-wide state that ``seed(s)`` resets (default seed 0). A draw of ``shape`` launches one
per-lane program on the device. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ArrayError
from ..isa.types import Type
from ..launch import LaunchConfig
from .array import Array
from .codegen import GENERATORS, Kernel, Emitter, convert_to
from .dtypes import as_dtype
from .runtime import as_device, launch
from .shapes import as_shape, size_of

__all__ = ["Key", "key", "split", "seed", "uniform", "normal", "RandomNode"]

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class Key:
    """A generator key: two u32 words."""

    k0: int
    k1: int


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def key(seed: int) -> Key:
    """The key of an integer ``seed`` (its splitmix64 mix, split into two u32 words)."""
    if not isinstance(seed, int):
        raise ArrayError(f"random.key: the seed must be an int, got {type(seed).__name__}")
    mixed = _splitmix64(seed & _MASK64)
    return Key(mixed & _MASK32, mixed >> 32)


def split(parent: Key, n: int = 2) -> list[Key]:
    """``n`` new keys derived from ``parent`` (independent streams; ``parent`` itself is not one of them)."""
    base = (parent.k1 << 32) | parent.k0
    return [key(_splitmix64(base ^ _splitmix64(j + 1))) for j in range(n)]


_state = [key(0)]


def seed(value: int) -> None:
    """Reset the module-wide state that draws without ``key=`` take their keys from."""
    _state[0] = key(value)


def _next_key() -> Key:
    _state[0], drawn = split(_state[0])
    return drawn


@dataclass(frozen=True, slots=True)
class RandomNode:
    """A draw of ``count`` values of ``dtype`` (``kind`` "uniform" or "normal"), element i from (key, i);
    presets: the output's handle, k0, k1, and the two affine parameters (low and high - low, or loc and
    scale) in the computing type."""

    kind: str
    count: int
    dtype: Type

    @property
    def compute(self) -> Type:
        return Type.F64 if self.dtype == Type.F64 else Type.F32


def _hash(em: Emitter, x: str) -> str:
    for shift, factor in ((16, 0x7FEB352D), (15, 0x846CA68B), (16, None)):
        t = em.reg()
        em.emit(f"shr.u32 {t}, {x}, {em.const(shift)}\nxor.u32 {t}, {x}, {t}")
        x = t
        if factor is not None:
            t = em.reg()
            em.emit(f"mul.u32 {t}, {x}, {em.const(factor)}")
            x = t
    return x


def _word(em: Emitter, counter: str) -> str:
    """``H(H(counter ^ k0) ^ k1)`` (k0 in r2, k1 in r3)."""
    t = em.reg()
    em.emit(f"xor.u32 {t}, {counter}, r2")
    h = _hash(em, t)
    t = em.reg()
    em.emit(f"xor.u32 {t}, {h}, r3")
    return _hash(em, t)


def _float_imm(em: Emitter, ty: Type, value: float) -> str:
    r = em.reg()
    em.emit(f"mov_imm.{ty.suffix} {r}, {value!r}")
    return r


def _uniform_value(em: Emitter, ty: Type, counter: str, words: int) -> str:
    """A uniform in [0, 1) of ``ty`` from the words at counters ``counter * words + j``."""
    base = counter
    if words > 1:
        base = em.reg()
        em.emit(f"mul.u32 {base}, {counter}, {em.const(words)}")
    if ty == Type.F32:
        bits, value = em.reg(), em.reg()
        em.emit(f"shr.u32 {bits}, {_word(em, base)}, {em.const(8)}\ncvt.f32.u32 {value}, {bits}\n"
                f"mul.f32 {value}, {value}, {_float_imm(em, ty, 2.0 ** -24)}")
        return value
    second = em.reg()
    em.emit(f"add.u32 {second}, {base}, {em.const(1)}")
    hi, lo, fhi, flo = em.reg(), em.reg(), em.reg(), em.reg()
    em.emit(f"shr.u32 {hi}, {_word(em, base)}, {em.const(5)}\nshr.u32 {lo}, {_word(em, second)}, {em.const(6)}\n"
            f"cvt.f64.u32 {fhi}, {hi}\ncvt.f64.u32 {flo}, {lo}\n"
            f"mul.f64 {fhi}, {fhi}, {_float_imm(em, ty, 2.0 ** 26)}\nadd.f64 {fhi}, {fhi}, {flo}\n"
            f"mul.f64 {fhi}, {fhi}, {_float_imm(em, ty, 2.0 ** -53)}")
    return fhi


def _random_kernel(node: RandomNode) -> Kernel:
    em = Emitter()
    ty = node.compute
    presets = (("handle", -1, Type.U32), ("scalar", 0, Type.U32), ("scalar", 1, Type.U32), ("scalar", 2, ty),
               ("scalar", 3, ty))
    em.guard(node.count)
    per = 1 if ty == Type.F32 else 2   # words per uniform
    t = ty.suffix
    if node.kind == "uniform":
        value = _uniform_value(em, ty, "r255", per)
    else:
        pair = em.reg()
        em.emit(f"mul.u32 {pair}, r255, {em.const(2)}")
        u1, u2 = _uniform_value(em, ty, pair, per), None
        odd = em.reg()
        em.emit(f"add.u32 {odd}, {pair}, {em.const(1)}")
        u2 = _uniform_value(em, ty, odd, per)
        one, radius, angle = _float_imm(em, ty, 1.0), em.reg(), em.reg()
        em.emit(f"sub.{t} {radius}, {one}, {u1}\nlog.{t} {radius}, {radius}\n"
                f"mul.{t} {radius}, {radius}, {_float_imm(em, ty, -2.0)}\nsqrt.{t} {radius}, {radius}\n"
                f"mul.{t} {angle}, {u2}, {_float_imm(em, ty, 6.283185307179586)}\ncos.{t} {angle}, {angle}\n"
                f"mul.{t} {radius}, {radius}, {angle}")
        value = radius
    result = em.reg()
    em.emit(f"mul.{t} {result}, {value}, r5\nadd.{t} {result}, {result}, r4")
    em.store_lane("r1", convert_to(em, result, ty, node.dtype), node.dtype)
    return Kernel(em.program(), LaunchConfig.linear(node.count), presets)


GENERATORS[RandomNode] = _random_kernel

_FLOATS = (Type.F16, Type.F32, Type.F64)


def _draw(kind: str, shape: Any, a: float, b: float, dtype: Any, key: Key | None, device: Any) -> Array:
    what = f"random.{kind}"
    ty, is_bool = as_dtype(dtype, what)
    if ty not in _FLOATS or is_bool:
        raise ArrayError(f"{what}: dtype must be float16, float32 or float64, not {dtype!r}")
    shape = as_shape(shape, what)
    if key is not None and not isinstance(key, Key):
        raise ArrayError(f"{what}: key must be a random.Key (random.key(seed)), got {type(key).__name__}")
    drawn = key if key is not None else _next_key()
    target = as_device(device)
    out = Array.empty(target, shape, ty)
    count = size_of(shape)
    if count:
        if count >= 1 << 30:
            raise ArrayError(f"{what}: at most 2**30 values per draw (counters are 32-bit), asked {count}")
        launch(what, RandomNode(kind, count, ty), target, [drawn.k0, drawn.k1, float(a), float(b)], (out.buffer, 0))
    return out


def uniform(shape: Any = (), low: float = 0.0, high: float = 1.0, dtype: Any = "float32", *, key: Key | None = None,
            device: Any = None) -> Array:
    """Uniform values in [low, high) of ``shape`` (``low + (high - low) * u``), the same bits on every
    backend. Raises ArrayError for a non-float dtype or a bad shape."""
    return _draw("uniform", shape, low, high - low, dtype, key, device)


def normal(shape: Any = (), loc: float = 0.0, scale: float = 1.0, dtype: Any = "float32", *, key: Key | None = None,
           device: Any = None) -> Array:
    """Normal values (Box-Muller) of ``shape``: ``loc + scale * z``. Raises ArrayError for a non-float
    dtype or a bad shape."""
    return _draw("normal", shape, loc, scale, dtype, key, device)
