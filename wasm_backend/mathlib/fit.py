"""Minimax polynomial fitting (Remez exchange in mpmath): the offline tool that made ``coefficients.py``.

Not imported by the library at run time (it needs mpmath). Each ``RoutineSpec``
names the function a routine polynomial stands for, its interval, the weight
that turns the polynomial's error into the routine's relative error, and how
many terms each float format uses. ``python3 -m wasm_backend.mathlib.fit``
fits every spec, rounds the coefficients to the format and prints the
``coefficients.py`` table together with the weighted error each fit reaches
after rounding (the ``error_log2`` column there).

The fitted quantity is always ``g(t) = sum(c[i] * t**i)`` on ``[lo, hi]``,
minimising ``max |weight(t) * (target(t) - g(t))|`` (powers from 0 keep the
basis a Haar system; the weights never vanish).

Raises ValueError for a spec whose linear system is singular (too many terms
for the precision) or whose exchange does not find enough alternating extrema.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import mpmath
from mpmath import mp

__all__ = ["RoutineSpec", "FitResult", "remez", "round_to_format", "rounded_error", "ROUTINE_SPECS", "main"]

_WORK_PRECISION = 320   # bits: the targets are written with cancelling terms near t = 0


@dataclass(frozen=True)
class RoutineSpec:
    """One routine polynomial: ``target`` and ``weight`` are mpmath functions of ``t`` on ``[lo, hi]``."""

    name: str
    what: str
    target: Callable[[mpmath.mpf], mpmath.mpf]
    weight: Callable[[mpmath.mpf], mpmath.mpf]
    lo: float
    hi: float
    terms: dict[str, int]     # float format ("f32", "f64") -> number of coefficients


@dataclass(frozen=True)
class FitResult:
    """Coefficients (lowest power first) and the weighted max error of the exact-coefficient fit."""

    coefficients: tuple
    max_error: mpmath.mpf


def _grid(lo, hi, count: int) -> list:
    """Chebyshev-clustered sample points, endpoints included."""
    half, mid = (hi - lo) / 2, (hi + lo) / 2
    return [mid - half * mpmath.cos(mpmath.pi * i / (count - 1)) for i in range(count)]


def _poly(coefficients, t):
    acc = mpmath.mpf(0)
    for c in reversed(coefficients):
        acc = acc * t + c
    return acc


def _local_extrema(points: list, errors: list) -> list[tuple]:
    """(t, e) at the endpoints and where |e| has a local maximum, merged into runs of alternating sign."""
    picked = []
    for i, e in enumerate(errors):
        left = abs(errors[i - 1]) if i > 0 else -1
        right = abs(errors[i + 1]) if i + 1 < len(errors) else -1
        if abs(e) >= left and abs(e) >= right:
            picked.append((points[i], e))
    merged: list[tuple] = []
    for t, e in picked:
        if merged and (merged[-1][1] >= 0) == (e >= 0):
            if abs(e) > abs(merged[-1][1]):
                merged[-1] = (t, e)
        else:
            merged.append((t, e))
    return merged


def remez(target, weight, lo: float, hi: float, terms: int, *, iterations: int = 30,
          grid_size: int = 2500) -> FitResult:
    """The minimax polynomial with ``terms`` coefficients for ``weight * (target - g)`` on ``[lo, hi]``."""
    with mp.workprec(_WORK_PRECISION):
        lo_m, hi_m = mpmath.mpf(lo), mpmath.mpf(hi)
        grid = _grid(lo_m, hi_m, grid_size)
        values = [target(t) for t in grid]
        weights = [weight(t) for t in grid]
        reference = _grid(lo_m, hi_m, terms + 1)
        coefficients: list = []
        best = None
        for _ in range(iterations):
            rows = [[t ** i for i in range(terms)] + [(-1) ** j / weight(t)] for j, t in enumerate(reference)]
            rhs = [target(t) for t in reference]
            try:
                solution = mpmath.lu_solve(mpmath.matrix(rows), mpmath.matrix(rhs))
            except ZeroDivisionError:
                raise ValueError(f"Remez system is singular with {terms} terms on [{lo}, {hi}]") from None
            coefficients = [solution[i] for i in range(terms)]
            errors = [w * (v - _poly(coefficients, t)) for t, v, w in zip(grid, values, weights)]
            extrema = _local_extrema(grid, errors)
            if len(extrema) < terms + 1:
                raise ValueError(f"Remez exchange found {len(extrema)} alternating extrema, needs {terms + 1}")
            while len(extrema) > terms + 1:
                extrema.pop(0 if abs(extrema[0][1]) < abs(extrema[-1][1]) else -1)
            reference = [t for t, _ in extrema]
            largest = max(abs(e) for e in errors)
            smallest = min(abs(e) for _, e in extrema)
            best = largest
            if largest - smallest < largest * mpmath.mpf("1e-4"):
                break
        return FitResult(tuple(coefficients), best)


def round_to_format(value, fmt: str) -> float:
    """``value`` rounded to nearest in ``fmt`` ("f32" or "f64"), as a Python float."""
    import struct
    as_double = float(mpmath.mpf(value))
    if fmt == "f64":
        return as_double
    return struct.unpack("<f", struct.pack("<f", as_double))[0]


def rounded_error(spec: RoutineSpec, coefficients: list[float], grid_size: int = 3000) -> float:
    """log2 of the weighted max error of the polynomial with the given (rounded) coefficients."""
    with mp.workprec(_WORK_PRECISION):
        worst = max(abs(spec.weight(t) * (spec.target(t) - _poly([mpmath.mpf(c) for c in coefficients], t)))
                    for t in _grid(mpmath.mpf(spec.lo), mpmath.mpf(spec.hi), grid_size))
        return float(mpmath.log(worst, 2)) if worst else float("-inf")


# ---- the routines --------------------------------------------------------------------------------------------
# Each target is a routine's "tail function" with the known powers divided out (its limit at t = 0 given), fitted
# for least relative error: the routine's own relative error is then that error times the tail's share of the
# result (r^2*Q(r) is at most 7 % of exp(r), s*z*R(z) under 1 % of log(1+f), ...).

_TINY = mpmath.mpf(2) ** -60   # below this the tail functions are their limits to far beyond f64 precision


def _exp_q(r):          # exp(r) = 1 + r + r^2 * Q(r)
    return (mpmath.expm1(r) - r) / (r * r) if abs(r) > _TINY else mpmath.mpf(1) / 2


def _log_r(z):          # log(1+f) = 2 atanh(s) = 2s + s * z * R(z), s = f / (2 + f), z = s^2
    s = mpmath.sqrt(z)
    return (2 * mpmath.atanh(s) - 2 * s) / (s * z) if z > _TINY else mpmath.mpf(2) / 3


def _log_p(z):          # 2 atanh(s) = 2s + 2s^3/3 + s * z^2 * P(z)
    s = mpmath.sqrt(z)
    return (2 * mpmath.atanh(s) - 2 * s - 2 * s * z / 3) / (s * z * z) if z > _TINY else mpmath.mpf(2) / 5


def _odd_tail(fn, limit: str):   # fn(x) = x + x * z * T(z), z = x^2
    def tail(z):
        x = mpmath.sqrt(z)
        return (fn(x) - x) / (x * z) if z > _TINY else mpmath.mpf(limit)
    return tail


def _cos_c(z):          # cos(r) = 1 - z/2 + z^2 * C(z), z = r^2
    return (mpmath.cos(mpmath.sqrt(z)) - 1 + z / 2) / (z * z) if z > _TINY else mpmath.mpf(1) / 24


def _relative(fn):
    return lambda t: 1 / abs(fn(t))


_LN2 = 0.6931471805599453
_TAN_PI_8 = 0.41421356237309515
_SIN_S = _odd_tail(mpmath.sin, "-1/6")
_TANH_T = _odd_tail(mpmath.tanh, "-1/3")
_ATAN_A = _odd_tail(mpmath.atan, "-1/3")

ROUTINE_SPECS: dict[str, RoutineSpec] = {spec.name: spec for spec in (
    RoutineSpec("EXP_Q", "exp(r) = 1 + r + r^2*Q(r), |r| <= ln2/2", _exp_q, _relative(_exp_q),
               -_LN2 / 2 - 1e-3, _LN2 / 2 + 1e-3, {"f32": 5, "f64": 11}),
    RoutineSpec("LOG_R", "log(1+f) = 2s + s*z*R(z), s = f/(2+f), z = s^2 <= 0.0295", _log_r, _relative(_log_r),
               0.0, 0.0295, {"f32": 3, "f64": 7}),
    RoutineSpec("LOG_P", "2*atanh(s) = 2s + 2s^3/3 + s*z^2*P(z), z = s^2 <= 0.0295", _log_p, _relative(_log_p),
               0.0, 0.0295, {"f64": 8}),
    RoutineSpec("SIN_S", "sin(r) = r + r*z*S(z), z = r^2 <= (pi/4)^2", _SIN_S, _relative(_SIN_S),
               0.0, 0.6169, {"f64": 7}),
    RoutineSpec("COS_C", "cos(r) = 1 - z/2 + z^2*C(z), z = r^2 <= (pi/4)^2", _cos_c, _relative(_cos_c),
               0.0, 0.6169, {"f64": 6}),
    RoutineSpec("TANH_T", "tanh(x) = x + x*z*T(z), z = x^2 <= 0.625^2", _TANH_T, _relative(_TANH_T),
               0.0, 0.3907, {"f32": 6, "f64": 12}),
    RoutineSpec("ATAN_A", "atan(u) = u + u*z*A(z), z = u^2 <= tan(pi/8)^2", _ATAN_A, _relative(_ATAN_A),
               0.0, _TAN_PI_8 ** 2 + 1e-4, {"f64": 11}),
)}


def main(argv: list[str] | None = None) -> None:
    """Fit every spec (or the names given) and print the coefficients table."""
    names = (argv if argv is not None else sys.argv[1:]) or list(ROUTINE_SPECS)
    for name in names:
        spec = ROUTINE_SPECS[name]
        for fmt, terms in spec.terms.items():
            result = remez(spec.target, spec.weight, spec.lo, spec.hi, terms)
            rounded = [round_to_format(c, fmt) for c in result.coefficients]
            err = rounded_error(spec, rounded)
            print(f"    ({name!r}, {fmt!r}): ({', '.join(repr(c) for c in rounded)},),  "
                  f"# error 2^{err:.1f} (exact coefficients 2^{float(mpmath.log(result.max_error, 2)):.1f})")


if __name__ == "__main__":
    main()
