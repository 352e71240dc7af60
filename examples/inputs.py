"""Random inputs for the examples, built without a per-element Python loop and with the same bits everywhere.

A generator's words are the next outputs of its Mersenne Twister (the bytes of ``random.Random.randbytes``,
or NumPy's MT19937 started from the same state); word ``w`` (a u32) becomes

* ``uniform_f32``: the f32 nearest to ``lo + span * (w * 2**-32)`` computed in doubles (the scaling is
  exact, the product and the sum are each rounded once, then the result once to f32), a value in
  ``[lo, hi]``;
* ``randint_u32``: the integer ``lo + (w * count >> 32)``, a value in ``[lo, lo + count)``.

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

__all__ = ["random_words", "uniform_f32", "randint_u32", "random_u8", "engine_name", "ENGINES",
           "MAX_RANDINT_COUNT"]

#: the largest ``count`` of randint_u32: ``w * count`` stays below 2**53, exact in JavaScript's doubles
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


def _uniform_numpy(rng: random.Random, n: int, lo: float, step: float) -> array.array:
    import numpy as np
    values = _words_numpy(rng, n).astype(np.float64)
    values *= step
    values += lo
    return _as_array(values.astype(np.float32), "f")


def _randint_numpy(rng: random.Random, n: int, lo: int, count: int) -> array.array:
    import numpy as np
    values = _words_numpy(rng, n)
    values *= count
    values >>= 32
    values += lo
    return _as_array(values.astype(np.uint32), "I")


def _uniform_stdlib(rng: random.Random, n: int, lo: float, step: float) -> array.array:
    return array.array("f", map(lo.__add__, map(step.__mul__, random_words(rng, n))))


def _randint_stdlib(rng: random.Random, n: int, lo: int, count: int) -> array.array:
    steps = map(operator.rshift, map(count.__mul__, random_words(rng, n)), itertools.repeat(32))
    return array.array("I", map(lo.__add__, steps))


_JS_UNIFORM = """(words, lo, step) => {
  const out = new Float32Array(words.length);
  for (let i = 0; i < words.length; i++) out[i] = lo + step * words[i];
  return out;
}"""
_JS_RANDINT = """(words, lo, count) => {
  const out = new Uint32Array(words.length), scale = 2 ** -32;
  for (let i = 0; i < words.length; i++) out[i] = lo + Math.floor(words[i] * count * scale);
  return out;
}"""


def _through_js(source: str, typecode: str, rng: random.Random, n: int, *args: float) -> array.array:
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


def _uniform_js(rng: random.Random, n: int, lo: float, step: float) -> array.array:
    return _through_js(_JS_UNIFORM, "f", rng, n, lo, step)


def _randint_js(rng: random.Random, n: int, lo: int, count: int) -> array.array:
    return _through_js(_JS_RANDINT, "I", rng, n, lo, count)


def _numpy_imports() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


#: engine name -> (is it usable here, the f32 map, the integer map); the first usable one is used
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
    _, uniform, _ = ENGINES[engine or engine_name()]
    # (hi - lo) * 2**-32 is exact, so ``step * w`` is ``span * (w * 2**-32)`` rounded once
    return uniform(rng, n, float(lo), (float(hi) - float(lo)) * _SCALE)


def randint_u32(rng: random.Random, n: int, lo: int, hi: int, *, engine: str | None = None) -> array.array:
    """``n`` u32 values in ``[lo, hi]`` (both ends included) from the next ``n`` words of ``rng``.

    Raises ValueError when ``hi - lo + 1`` is not in 1..MAX_RANDINT_COUNT or the values leave the u32 range,
    KeyError for an unknown engine.
    """
    count = hi - lo + 1
    if not 1 <= count <= MAX_RANDINT_COUNT or lo < 0 or hi >= 1 << 32:
        raise ValueError(f"randint_u32 needs 0 <= lo <= hi < 2**32 and at most {MAX_RANDINT_COUNT} values, "
                         f"got lo={lo}, hi={hi}")
    _, _, randint = ENGINES[engine or engine_name()]
    return randint(rng, n, int(lo), count)


def random_u8(rng: random.Random, n: int) -> array.array:
    """``n`` bytes of ``rng`` as an array of u8 (``randbytes``: no arithmetic, the same on every engine)."""
    return array.array("B", rng.randbytes(n))
