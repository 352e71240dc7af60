"""Input sweeps for measuring the math library (tests and benchmarks; needs NumPy).

``sweep(op, fmt, n, seed)`` returns the argument arrays (one per operand,
``n`` points or a little more) for one op in one lane format: a mix of
uniform points over the range where the op's value changes, points with
log-uniform magnitudes over its whole finite domain (tiny and subnormal
inputs included), and the floats at and next to the places where
implementations go wrong (overflow and underflow thresholds, 1 for the
logarithms, multiples of pi/2 for the trigonometric functions, the
switch-over points of the routines). ``SWEEP_TEXT`` says the same per op for
the published table. Every point lies in the op's documented range
(``bounds.DOCUMENTED_RANGE``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["sweep", "SWEEP_TEXT", "SWEEPS"]

_DTYPES = {"f32": np.float32, "f64": np.float64}
# smallest subnormal exponent, largest exponent, mantissa bits
_LIMITS = {"f32": (-149, 127, 23), "f64": (-1074, 1023, 52)}


class _Points:
    """Accumulates sweep points of one format."""

    def __init__(self, fmt: str, n: int, seed: int) -> None:
        self.fmt = fmt
        self.dtype = _DTYPES[fmt]
        self.rng = np.random.default_rng(seed)
        self.n = n
        self.parts: list[np.ndarray] = []

    def share(self, fraction: float) -> int:
        return max(1, int(self.n * fraction))

    def add(self, values) -> None:
        with np.errstate(over="ignore"):
            self.parts.append(np.asarray(values, dtype=np.float64).astype(self.dtype))

    def uniform(self, fraction: float, lo: float, hi: float) -> None:
        self.add(self.rng.uniform(lo, hi, self.share(fraction)))

    def log_uniform(self, fraction: float, lo_exp: float, hi_exp: float, *, signed: bool = True) -> None:
        count = self.share(fraction)
        magnitude = np.exp2(self.rng.uniform(lo_exp, hi_exp, count))
        sign = np.where(self.rng.random(count) < 0.5, -1.0, 1.0) if signed else 1.0
        self.add(sign * magnitude)

    def around(self, centers, steps: int = 3) -> None:
        """Each center (rounded to the format) and its ``steps`` neighbours on either side."""
        values = np.asarray(centers, dtype=np.float64).astype(self.dtype)
        out = [values]
        up, down = values.copy(), values.copy()
        for _ in range(steps):
            up = np.nextafter(up, self.dtype(np.inf))
            down = np.nextafter(down, self.dtype(-np.inf))
            out += [up, down]
        self.parts.append(np.concatenate(out))

    def result(self) -> np.ndarray:
        values = np.concatenate(self.parts)
        return values[np.isfinite(values)]


def _exp(p: _Points) -> list[np.ndarray]:
    low, high, mant = _LIMITS[p.fmt]
    overflow = (high + 1) * math.log(2)
    p.uniform(0.5, low * math.log(2) - 1.0, overflow)
    p.uniform(0.2, -1.0, 1.0)
    p.log_uniform(0.25, -(mant + 30), 10)
    p.around([overflow, -(high - 1) * math.log(2), (low - 1) * math.log(2), low * math.log(2), 0.5, -0.5,
              math.log(2) / 2, -math.log(2) / 2], steps=8)
    return [p.result()]


def _logarithm(p: _Points) -> list[np.ndarray]:
    low, high, _ = _LIMITS[p.fmt]
    p.log_uniform(0.5, low, high + 1, signed=False)
    p.uniform(0.3, 0.5, 2.0)
    p.around([1.0, 2.0, 0.5, 10.0, 100.0, 0.1, math.sqrt(0.5), math.sqrt(2.0)], steps=16)
    p.around(2.0 ** np.arange(low, high, 7), steps=1)
    return [p.result()]


def _trig(p: _Points) -> list[np.ndarray]:
    low, high, _ = _LIMITS[p.fmt]
    p.uniform(0.4, -10.0, 10.0)
    p.log_uniform(0.3, -40, high + 1)
    p.log_uniform(0.1, 19, 21)
    count = p.share(0.05)
    multiples = np.concatenate([np.arange(1, 64), p.rng.integers(64, 2 ** 20, count)]).astype(np.float64)
    p.around(multiples * (math.pi / 2), steps=2)
    p.around(-multiples[:count // 4] * (math.pi / 2), steps=1)
    p.around([math.pi / 4, 3 * math.pi / 4, 2.0 ** 20, 6381956970095103 * 2.0 ** 797 if p.fmt == "f64" else 1e30],
             steps=2)
    return [p.result()]


def _tanh(p: _Points) -> list[np.ndarray]:
    p.uniform(0.5, -25.0, 25.0)
    p.log_uniform(0.4, -60, 6)
    p.around([0.625, -0.625, 19.06, 9.01, 1e-8], steps=8)
    return [p.result()]


def _logistic(lo32: float, lo64: float) -> Callable[[_Points], list[np.ndarray]]:
    def points(p: _Points) -> list[np.ndarray]:
        lo = lo32 if p.fmt == "f32" else lo64
        p.uniform(0.5, lo, 40.0)
        p.uniform(0.2, -8.0, 8.0)
        p.log_uniform(0.25, -60, 10)
        p.around([0.0, lo, 36.7, 40.0, -40.0], steps=4)
        return [p.result()]
    return points


def _gelu(p: _Points) -> list[np.ndarray]:
    p.uniform(0.4, -40.0, 12.0)
    p.uniform(0.3, -28.0, -3.0)
    p.log_uniform(0.25, -60, 8)
    p.around([0.0, -40.0, 40.0, -1.0, 1.0], steps=4)
    return [p.result()]


def _pow(p: _Points) -> list[np.ndarray]:
    low, high, mant = _LIMITS[p.fmt]
    xs, ys = [], []

    def pair(x, y) -> None:
        xs.append(np.asarray(x, dtype=np.float64))
        ys.append(np.asarray(y, dtype=np.float64))

    count = p.share(0.35)
    x = np.exp2(p.rng.uniform(low + mant, high, count))
    with np.errstate(divide="ignore"):
        pair(x, p.rng.uniform(low, high, count) / np.log2(x))
    count = p.share(0.25)
    pair(p.rng.uniform(0.0, 4.0, count), p.rng.uniform(-30.0, 30.0, count))
    count = p.share(0.15)
    near_one = 1.0 + p.rng.uniform(-1e-5, 1e-5, count) if p.fmt == "f64" else 1.0 + p.rng.uniform(-1e-3, 1e-3, count)
    pair(near_one, p.rng.uniform(-1e6, 1e6, count) if p.fmt == "f64" else p.rng.uniform(-4e4, 4e4, count))
    count = p.share(0.15)
    base = -np.exp2(p.rng.uniform(-6.0, 6.0, count))
    pair(base, np.round(p.rng.uniform(-1.0, 1.0, count) * (high / 7.0)))
    count = p.share(0.1)
    pair(np.exp2(p.rng.uniform(-20, 20, count)) * np.where(p.rng.random(count) < 0.5, -1, 1),
         p.rng.integers(-12, 13, count).astype(np.float64))
    x = np.concatenate(xs).astype(p.dtype)
    y = np.concatenate(ys).astype(p.dtype)
    keep = np.isfinite(x) & np.isfinite(y) & (x != 0) & ((x > 0) | (y == np.trunc(y))) & (y != 0)
    with np.errstate(all="ignore"):
        value = np.power(x.astype(np.float64), y.astype(np.float64))
    keep &= np.isfinite(value) & (value != 0)
    return [x[keep], y[keep]]


def _atan2(p: _Points) -> list[np.ndarray]:
    low, high, _ = _LIMITS[p.fmt]
    ys, xs = [], []
    count = p.share(0.35)
    signs = lambda: np.where(p.rng.random(count) < 0.5, -1.0, 1.0)  # noqa: E731
    ys.append(signs() * np.exp2(p.rng.uniform(low, high + 1, count)))
    xs.append(signs() * np.exp2(p.rng.uniform(low, high + 1, count)))
    count = p.share(0.3)
    ys.append(p.rng.uniform(-4.0, 4.0, count))
    xs.append(p.rng.uniform(-4.0, 4.0, count))
    count = p.share(0.25)
    x = signs() * np.exp2(p.rng.uniform(-60, 60, count))
    xs.append(x)
    ys.append(x * signs() * np.where(p.rng.random(count) < 0.5, p.rng.uniform(0.9, 1.1, count),
                                     p.rng.uniform(0.40, 0.43, count)))
    count = p.share(0.1)
    x = signs() * np.exp2(p.rng.uniform(-10, 10, count))
    xs.append(x)
    ys.append(x * np.exp2(p.rng.uniform(-60, -20, count)) * signs())
    y = np.concatenate(ys).astype(p.dtype)
    x = np.concatenate(xs).astype(p.dtype)
    keep = np.isfinite(x) & np.isfinite(y) & ((x != 0) | (y != 0))
    return [y[keep], x[keep]]


def _rcp(p: _Points) -> list[np.ndarray]:
    low, high, _ = _LIMITS[p.fmt]
    p.log_uniform(0.9, low, high + 1)
    p.around([1.0, 3.0, 2.0 ** (high - 1), 2.0 ** low], steps=4)
    values = p.result()
    return [values[values != 0]]


def _rsqrt(p: _Points) -> list[np.ndarray]:
    low, high, _ = _LIMITS[p.fmt]
    p.log_uniform(0.9, low, high + 1, signed=False)
    p.around([1.0, 2.0, 4.0, 2.0 ** low], steps=4)
    values = p.result()
    return [values[values > 0]]


#: op -> point generator
SWEEPS: dict[str, Callable[[_Points], list[np.ndarray]]] = {
    "exp": _exp, "log": _logarithm, "log2": _logarithm, "log10": _logarithm, "sin": _trig, "cos": _trig,
    "tan": _trig, "tanh": _tanh, "sigmoid": _logistic(-105.0, -750.0), "swish": _logistic(-105.0, -750.0),
    "gelu": _gelu, "pow": _pow, "atan2": _atan2, "rcp": _rcp, "rsqrt": _rsqrt,
}

#: op -> what its sweep covers, for the published table
SWEEP_TEXT: dict[str, str] = {
    "exp": "uniform over the finite-result range, |x| log-uniform from 2**-(p+30), over/underflow thresholds",
    "log": "x log-uniform over all positive floats (subnormals too), uniform [0.5, 2], around 1 and powers of 2",
    "log2": "as log", "log10": "as log",
    "sin": "uniform [-10, 10], |x| log-uniform up to the largest float, around k*pi/2 for k < 2**20",
    "cos": "as sin", "tan": "as sin",
    "tanh": "uniform [-25, 25], |x| log-uniform from 2**-60, around the routine switch at 0.625",
    "sigmoid": "uniform from the underflow threshold to 40, |x| log-uniform from 2**-60",
    "swish": "as sigmoid",
    "gelu": "uniform [-40, 12] and [-28, -3] (the exponentially small tail), |x| log-uniform from 2**-60",
    "pow": "x log-uniform with y*log2(x) over the whole exponent range; x in (0, 4), y in [-30, 30]; x near 1 "
           "with large y; negative x with integer y",
    "atan2": "both log-uniform over all floats with signs; uniform [-4, 4]; near |y| = |x| and tan(pi/8)",
    "rcp": "x log-uniform over all floats with signs", "rsqrt": "x log-uniform over all positive floats",
}


def sweep(op: str, fmt: str, n: int, seed: int = 0) -> list[np.ndarray]:
    """About ``n`` sweep points for ``op`` in lane format ``fmt`` ("f32"/"f64"), one array per operand."""
    return SWEEPS[op](_Points(fmt, n, seed))
