"""Random inputs for the examples, built without a per-element Python loop and with the same bits everywhere.

A generator's words are the next outputs of its Mersenne Twister (the bytes of ``random.Random.randbytes``,
or NumPy's MT19937 started from the same state); word ``w`` (a u32) becomes

* ``uniform_f32``: the f32 nearest to ``lo + span * (w * 2**-32)`` computed in doubles (the scaling is
  exact, the product and the sum are each rounded once, then the result once to f32), a value in
  ``[lo, hi]``;
* ``uniform_f64``: that double itself (not rounded to f32);
* ``randint``: the integer ``lo + (w * count >> 32)``, a value in ``[lo, lo + count)``, stored as an
  integer of up to 64 bits (an ``array.array`` typecode of INT_TYPECODES; ``randint_u32``: as u32).

The arithmetic runs in NumPy where it imports (natively), in JavaScript under Pyodide (the site ships no
NumPy wheel) and in ``map`` over built-in operators otherwise; the three give the same bits (tested), so
the browser and the native side of a benchmark build the same inputs. At 10M elements the examples'
inputs took 40-64 s to build with a Python loop per element.
"""

from __future__ import annotations

import array
import itertools
import operator
import random
import sys
from typing import Callable

__all__ = ["random_words", "uniform_f32", "uniform_f64", "randint", "randint_u32", "INT_TYPECODES", "random_u8",
           "engine_name", "ENGINES", "MAX_RANDINT_COUNT"]

#: the largest ``count`` (``hi - lo + 1``) of randint: ``w * count`` stays below 2**53, exact in JavaScript's doubles
MAX_RANDINT_COUNT = 1 << 21
_SCALE = 2.0 ** -32


def random_words(rng: random.Random, n: int) -> array.array:
    """The next ``n`` u32 words of ``rng`` (4 * n bytes of ``randbytes``, read little-endian). One copy."""
    words = array.array("I")  # a C unsigned int: 4 bytes wherever Python and Pyodide run
    words.frombytes(rng.randbytes(4 * n))
    if sys.byteorder == "big":
        words.byteswap()
    return words


def _words_numpy(rng: random.Random, n: int):
    """The next ``n`` words of ``rng`` as a NumPy uint64 array: NumPy's MT19937 started from ``rng``'s state
    (the same generator; 10M words in 0.16 s against 1.05 s by ``randbytes`` here); ``rng`` is then moved
    past them."""
    import numpy as np
    version, state, gauss = rng.getstate()
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937",
                       "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]}}
    words = generator.random_raw(n)
    after = generator.state["state"]
    rng.setstate((version, tuple(int(k) for k in after["key"]) + (int(after["pos"]),), gauss))
    return words


def _as_array(values, typecode: str) -> array.array:
    out = array.array(typecode)
    out.frombytes(memoryview(values).cast("B"))  # through the buffer protocol: one copy
    return out


def _uniform_numpy(rng: random.Random, n: int, lo: float, step: float, typecode: str) -> array.array:
    import numpy as np
    values = _words_numpy(rng, n).astype(np.float64)
    values *= step
    values += lo
    return _as_array(values if typecode == "d" else values.astype(np.float32), typecode)


def _randint_numpy(rng: random.Random, n: int, lo: int, count: int, typecode: str) -> array.array:
    import numpy as np
    values = _words_numpy(rng, n)
    values *= count
    values >>= 32
    if lo < 0:
        values = values.astype(np.int64)
    values += lo
    return _as_array(values.astype(np.dtype(typecode)), typecode)


def _uniform_stdlib(rng: random.Random, n: int, lo: float, step: float, typecode: str) -> array.array:
    return array.array(typecode, map(lo.__add__, map(step.__mul__, random_words(rng, n))))


def _randint_stdlib(rng: random.Random, n: int, lo: int, count: int, typecode: str) -> array.array:
    steps = map(operator.rshift, map(count.__mul__, random_words(rng, n)), itertools.repeat(32))
    return array.array(typecode, map(lo.__add__, steps))


_JS_UNIFORM = """(words, lo, step, double) => {
  const out = double ? new Float64Array(words.length) : new Float32Array(words.length);
  for (let i = 0; i < words.length; i++) out[i] = lo + step * words[i];
  return out;
}"""
_JS_RANDINT = """(words, lo, count, kind) => {
  const out = new globalThis[kind](words.length), scale = 2 ** -32;
  if (kind.startsWith("Big")) {
    const base = BigInt(lo);
    for (let i = 0; i < words.length; i++) out[i] = base + BigInt(Math.floor(words[i] * count * scale));
  } else {
    for (let i = 0; i < words.length; i++) out[i] = lo + Math.floor(words[i] * count * scale);
  }
  return out;
}"""
#: the integer typecodes randint stores -> the JavaScript typed array of the same elements
INT_TYPECODES = {"b": "Int8Array", "B": "Uint8Array", "h": "Int16Array", "H": "Uint16Array", "i": "Int32Array",
                 "I": "Uint32Array", "q": "BigInt64Array", "Q": "BigUint64Array"}


def _through_js(source: str, typecode: str, rng: random.Random, n: int, *args: float | bool) -> array.array:
    """Run ``source`` (a JavaScript function of a Uint32Array of ``rng``'s next ``n`` words and ``args``,
    returning a typed array of ``typecode``'s elements); three copies."""
    from js import Uint32Array
    from pyodide.code import run_js
    there = Uint32Array.new(n)
    there.assign(random_words(rng, n))
    result = run_js(source)(there, *args)
    out = array.array(typecode, bytes(n * array.array(typecode).itemsize))
    result.assign_to(out)
    return out


def _uniform_js(rng: random.Random, n: int, lo: float, step: float, typecode: str) -> array.array:
    return _through_js(_JS_UNIFORM, typecode, rng, n, lo, step, typecode == "d")


def _randint_js(rng: random.Random, n: int, lo: int, count: int, typecode: str) -> array.array:
    return _through_js(_JS_RANDINT, typecode, rng, n, lo, count, INT_TYPECODES[typecode])


def _numpy_imports() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


#: engine name -> (is it usable here, the float map (f32, f64), the integer map); the first usable one is used
ENGINES: dict[str, tuple[Callable[[], bool], Callable, Callable]] = {
    "numpy": (_numpy_imports, _uniform_numpy, _randint_numpy),
    "javascript": (lambda: sys.platform == "emscripten", _uniform_js, _randint_js),
    "stdlib": (lambda: True, _uniform_stdlib, _randint_stdlib),
}
_chosen: list[str] = []


def engine_name() -> str:
    """The engine this process uses (the first usable one of ENGINES; decided once)."""
    if not _chosen:
        _chosen.append(next(name for name, (usable, _, _) in ENGINES.items() if usable()))
    return _chosen[0]


def uniform_f32(rng: random.Random, n: int, lo: float, hi: float, *, engine: str | None = None) -> array.array:
    """``n`` f32 values in ``[lo, hi]`` from the next ``n`` words of ``rng`` (see the module's docstring).
    ``engine`` picks one of ENGINES (default: engine_name()). Raises KeyError for an unknown engine."""
    return _uniform(rng, n, lo, hi, engine, "f")


def uniform_f64(rng: random.Random, n: int, lo: float, hi: float, *, engine: str | None = None) -> array.array:
    """``n`` f64 values in ``[lo, hi]``: the doubles uniform_f32 rounds to f32 (see the module's docstring).
    Raises KeyError for an unknown engine."""
    return _uniform(rng, n, lo, hi, engine, "d")


def _uniform(rng: random.Random, n: int, lo: float, hi: float, engine: str | None, typecode: str) -> array.array:
    _, uniform, _ = ENGINES[engine or engine_name()]
    # (hi - lo) * 2**-32 is exact, so ``step * w`` is ``span * (w * 2**-32)`` rounded once
    return uniform(rng, n, float(lo), (float(hi) - float(lo)) * _SCALE, typecode)


def randint(rng: random.Random, n: int, lo: int, hi: int, typecode: str = "I", *,
            engine: str | None = None) -> array.array:
    """``n`` integers in ``[lo, hi]`` (both ends included) from the next ``n`` words of ``rng``, as an array of
    ``typecode`` (one of INT_TYPECODES).

    Raises ValueError when ``hi - lo + 1`` is not in 1..MAX_RANDINT_COUNT or the values leave the typecode's
    range, KeyError for an unknown engine or typecode.
    """
    if typecode not in INT_TYPECODES:
        raise KeyError(f"randint stores the integer typecodes {', '.join(INT_TYPECODES)}, got {typecode!r}")
    bits = 8 * array.array(typecode).itemsize
    least, most = (-(1 << bits - 1), (1 << bits - 1) - 1) if typecode.islower() else (0, (1 << bits) - 1)
    count = hi - lo + 1
    if not 1 <= count <= MAX_RANDINT_COUNT or lo < least or hi > most:
        raise ValueError(f"randint needs {least} <= lo <= hi <= {most} (typecode {typecode!r}) and at most "
                         f"{MAX_RANDINT_COUNT} values, got lo={lo}, hi={hi}")
    _, _, draw = ENGINES[engine or engine_name()]
    return draw(rng, n, int(lo), count, typecode)


def randint_u32(rng: random.Random, n: int, lo: int, hi: int, *, engine: str | None = None) -> array.array:
    """``n`` u32 values in ``[lo, hi]``: ``randint`` with typecode ``"I"``. Raises as ``randint`` does."""
    return randint(rng, n, lo, hi, "I", engine=engine)


def random_u8(rng: random.Random, n: int) -> array.array:
    """``n`` bytes of ``rng`` as an array of u8 (``randbytes``: no arithmetic, the same on every engine)."""
    return array.array("B", rng.randbytes(n))
