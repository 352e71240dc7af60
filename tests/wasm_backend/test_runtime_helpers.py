"""The runtime helpers carried in generated modules, checked value by value against exact references:
float format rounding, binary16 codecs, round to odd, fmod, fused multiply-add, the extended-integer
library."""

from __future__ import annotations

import itertools
import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest

from atlas_web.reference.numeric_fma import fma_exact_scalar
from atlas_web.reference.numeric_formats import round_f32_to_bf16, round_f64_to_f32_odd
from wasm_backend.encoding.types import ExternKind
from wasm_backend.lowering import extended, runtime  # noqa: F401 (register the helpers)
from wasm_backend.lowering.module_context import ModuleContext
from wasm_backend.runners import create_runner

_RUNNER = create_runner(budgeted=False)


def _helpers(*names: str):
    """An instance exporting the named helpers (and its memory runner handle)."""
    m = ModuleContext("helpers")
    for name in names:
        m.builder.add_export(name, ExternKind.FUNC, m.helper(name))
    memory = _RUNNER.create_memory(2, 2)
    instance = _RUNNER.instantiate(_RUNNER.compile(m.to_bytes()), memory=memory)
    return instance, lambda name: (lambda *args: _RUNNER.call(instance, name, *args))


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _f32_patterns(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    edges = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
             1e-45, math.inf, -math.inf, 2.0 ** -15 * 1.5, 1.0009765625, 1.00048828125]
    out = [_f32(v) for v in edges]
    while len(out) < n:
        out.append(struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0])
    return [v for v in out if not math.isnan(v)]


def test_round_f16_matches_numpy():
    _, call = _helpers("round_f16")
    f = call("round_f16")
    for x in _f32_patterns(3000, 1) + [v * s for v in np.linspace(-70000, 70000, 500).tolist() for s in (1,)]:
        x = _f32(x)
        with np.errstate(over="ignore"):   # values past f16's range round to inf, which is the point
            want = float(np.float32(x).astype(np.float16))
        got = f(x)
        assert got == want or (math.isnan(got) and math.isnan(want)), x
        assert math.copysign(1, got) == math.copysign(1, want)
    assert math.isnan(f(math.nan))


def test_round_bf16_matches_the_reference():
    _, call = _helpers("round_bf16")
    f = call("round_bf16")
    xs = np.array(_f32_patterns(3000, 2) + [math.nan], dtype=np.float32)
    want = round_f32_to_bf16(xs)
    for x, w in zip(xs.tolist(), want.tolist()):
        got = f(x)
        assert (math.isnan(got) and math.isnan(w)) or struct.pack("<f", got) == struct.pack("<f", w)


def test_f16_codecs_are_exact_for_every_pattern():
    _, call = _helpers("f16_from_bits", "f16_to_bits")
    decode, encode = call("f16_from_bits"), call("f16_to_bits")
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    for bits in range(0, 65536, 7):
        value = decode(bits)
        want = float(halves[bits])
        if math.isnan(want):
            assert math.isnan(value) and encode(value) & 0x7C00 == 0x7C00
            continue
        assert struct.pack("<f", value) == struct.pack("<f", want), bits
        assert encode(value) == bits, bits


def test_f64_to_f32_odd_matches_the_reference():
    _, call = _helpers("f64_to_f32_odd")
    f = call("f64_to_f32_odd")
    rng = random.Random(3)
    xs = [rng.uniform(-1e3, 1e3) for _ in range(500)] + [1e39, -1e39, 1e-46, 3.4e38, 1.0, 0.1, 2.0 ** -149 * 0.75]
    xs += [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(500)]
    xs = [x for x in xs if not math.isnan(x)]
    want = round_f64_to_f32_odd(np.array(xs))
    for x, w in zip(xs, want.tolist()):
        assert struct.pack("<f", f(x)) == struct.pack("<f", w), x


def test_fmod_is_exact():
    _, call = _helpers("fmod64")
    f = call("fmod64")
    rng = random.Random(4)
    pairs = [(5.5, 2.0), (-5.5, 2.0), (1e300, 3.0), (3.0, 1e-300), (5e-324, 3e-324), (1.0, math.inf),
             (math.inf, 1.0), (1.0, 0.0), (-0.0, 1.0), (7.0, -7.0), (2.0 ** 1000, 2.0 ** -1000 * 3)]
    for _ in range(400):
        a = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        b = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        pairs.append((a, b))
        pairs.append((rng.uniform(-100, 100), rng.uniform(-10, 10)))
    for a, b in pairs:
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
            assert math.isnan(f(a, b))
            continue
        want = math.fmod(a, b)
        got = f(a, b)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (a, b)


def test_fma_rounds_once():
    _, call = _helpers("fma32", "fma64")
    fma32, fma64 = call("fma32"), call("fma64")
    rng = random.Random(5)
    for _ in range(400):
        a, b, c = (_f32(rng.uniform(-4, 4) * 2.0 ** rng.randint(-30, 30)) for _ in range(3))
        exact = Fraction(a) * Fraction(b) + Fraction(c)  # exactly representable in f64: f32 products are exact
        assert fma32(a, b, c) == np.float32(_nearest_f32(exact)), (a, b, c)
        x, y, z = (rng.uniform(-1, 1) * 2.0 ** rng.randint(-400, 400) for _ in range(3))
        assert fma64(x, y, z) == fma_exact_scalar(x, y, z), (x, y, z)
    # a product that needs all of its bits: x*x + c with c cancelling the high part
    x = 1.0 + 2.0 ** -30
    assert fma64(x, x, -1.0) == fma_exact_scalar(x, x, -1.0) == 2.0 ** -29 + 2.0 ** -60


def _nearest_f32(exact: Fraction) -> float:
    """``exact`` rounded to nearest even in f32 (exactly, without a double rounding)."""
    below = _f32(float(exact))
    candidates = [below, float(np.nextafter(np.float32(below), np.float32(np.inf))),
                  float(np.nextafter(np.float32(below), np.float32(-np.inf)))]
    best = min(candidates, key=lambda v: (abs(Fraction(v) - exact), struct.unpack("<I", struct.pack("<f", v))[0] & 1))
    return best


def _limbs(value: int, n: int) -> bytes:
    return (value & ((1 << (64 * n)) - 1)).to_bytes(8 * n, "little")


@pytest.fixture(scope="module")
def ext():
    names = ("ext_add", "ext_sub", "ext_mul", "ext_divmod_u", "ext_cmp_u", "ext_cmp_s", "ext_shl", "ext_shr_u",
             "ext_shr_s", "ext_neg", "ext_to_f64", "ext_from_f64", "ext_resize", "ext_from_i64", "ext_is_zero")
    instance, call = _helpers(*names)
    return instance, call


def _write(instance, address: int, data: bytes) -> None:
    _RUNNER.write_memory(instance, address, data)


def _read(instance, address: int, n: int) -> int:
    return int.from_bytes(_RUNNER.read_memory(instance, address, 8 * n), "little")


@pytest.mark.parametrize("n", [2, 5])
def test_extended_arithmetic_matches_python_ints(ext, n):
    instance, call = ext
    bits = 64 * n
    mask = (1 << bits) - 1
    rng = random.Random(n)
    A, B, D, Q, R, T = (1024 * k for k in range(1, 7))
    for _ in range(60):
        a = rng.getrandbits(rng.choice([1, 30, bits // 2, bits]))
        b = rng.getrandbits(rng.choice([1, 30, bits // 2, bits])) or 7
        _write(instance, A, _limbs(a, n))
        _write(instance, B, _limbs(b, n))
        for name, want in (("ext_add", a + b), ("ext_sub", a - b)):
            call(name)(D, A, B, n)
            assert _read(instance, D, n) == want & mask, name
        call("ext_mul")(D, A, B, n, T)
        assert _read(instance, D, n) == (a * b) & mask
        call("ext_divmod_u")(Q, R, A, B, n)
        assert (_read(instance, Q, n), _read(instance, R, n)) == divmod(a, b)
        assert call("ext_cmp_u")(A, B, n) == (a > b) - (a < b)
        sa, sb = (v - (1 << bits) if v >> (bits - 1) else v for v in (a, b))
        assert call("ext_cmp_s")(A, B, n) == (sa > sb) - (sa < sb)
        shift = rng.randrange(0, 3 * bits)
        call("ext_shl")(D, A, shift, n)
        assert _read(instance, D, n) == (a << (shift % bits)) & mask
        call("ext_shr_u")(D, A, shift, n)
        assert _read(instance, D, n) == a >> (shift % bits)
        call("ext_shr_s")(D, A, shift, n)
        assert _read(instance, D, n) == (sa >> (shift % bits)) & mask
        call("ext_neg")(D, A, n)
        assert _read(instance, D, n) == (-a) & mask
        assert call("ext_is_zero")(A, n) == (a == 0)


def test_extended_conversions(ext):
    instance, call = ext
    rng = random.Random(9)
    A, D, T = 1024, 2048, 4096
    from atlas_web.reference.numeric_conversions import round_int_to_float
    from atlas_web.isa import Type
    for _ in range(80):
        n = rng.choice([2, 4])
        bits = 64 * n
        value = rng.getrandbits(rng.randrange(1, bits + 1)) * rng.choice([1, -1])
        signed = value < 0 or rng.random() < 0.5
        _write(instance, A, _limbs(value, n))
        held = value if signed else value & ((1 << bits) - 1)
        assert call("ext_to_f64")(A, n, int(signed), T, 0) == round_int_to_float(held, Type.F64)
        x = rng.uniform(-1, 1) * 2.0 ** rng.randrange(0, bits + 8)
        call("ext_from_f64")(D, x, n, int(signed))
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        want = min(max(math.trunc(x), lo), hi)
        assert _read(instance, D, n) == want & ((1 << bits) - 1), (x, n, signed)
        small = rng.randrange(-(1 << 63), 1 << 63)
        call("ext_from_i64")(D, small, 1, n)
        assert _read(instance, D, n) == small & ((1 << bits) - 1)
        call("ext_resize")(D, A, n, n + 1, int(signed))
        assert _read(instance, D, n + 1) == held & ((1 << (64 * n + 64)) - 1)


def fraction_fma(a: float, b: float, c: float) -> float:
    """a*b + c rounded once to f64, from exact rationals (Python's int division rounds correctly, also to
    subnormals); an exact zero is -0 only when both a*b and c are negative zeros' signs, as IEEE says."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return -0.0 if math.copysign(1, a) * math.copysign(1, b) < 0 and math.copysign(1, c) < 0 else 0.0
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def f64_bits(value: float) -> int:
    """The IEEE bits of ``value`` as an f64 (so that -0.0 and NaN payloads compare)."""
    return struct.unpack("<Q", struct.pack("<d", value))[0]


#: the issue's repros (two roundings gave 0.0) and the edges of the scaled path: a product far above
#: or below an addend, results at the overflow threshold, in the top subnormal binade and at the
#: smallest normal (a sum just below it used to round up twice)
FMA64_EDGES = [
    (3.2733906109447244e+150, 3.2733906048475593e+150, -1.0715086071862673e+301),
    (2.409919867347297e-181, 3.872591911242686e-121, -9.332636185032189e-302),
    (3.654086135919885e-129, 1.375667875693379e-179, -2.8017350536943345e-308),
    (-5.884716126418723e-45, 1.5048650304357473e-252, 8.85570351271021e-297),
    (2.0 ** 600, 2.0 ** 423 * 1.9999999999999998, -1.7976931348623157e308),
    (1.3407807929942596e154, 1.3407807929942596e154, -2.0 ** 970),
    (2.0 ** -600, 2.0 ** -500, 2.0 ** 10), (2.0 ** 600, 2.0 ** 500, -2.0 ** -1074),
    (5e-324, 0.5, 0.0), (5e-324, 1.5, -0.0), (-5e-324, 2.0 ** 1023, 2.0 ** -52), (1e-300, 1e-300, -0.0),
]


def extreme_triples(count: int, seed: int):
    """Triples with exponents from the whole f64 range, a third with an addend that nearly cancels the
    product, and products aimed at the subnormal and overflow boundaries."""
    rng = random.Random(seed)
    for _ in range(count):
        a = rng.uniform(1, 2) * rng.choice((1, -1)) * 2.0 ** rng.randint(-1074, 1023)
        target = rng.choice((-1080, -1074, -1050, -1023, -1022, -1000, 0, 1000, 1023, 1025))
        b = rng.uniform(1, 2) * rng.choice((1, -1)) * 2.0 ** min(1023, max(-1074, target - math.frexp(a)[1]))
        product = Fraction(a) * Fraction(b)
        kind = rng.random()
        if kind < 0.4 and abs(product) < Fraction(2) ** 1023:
            c = -float(product) + rng.choice((0, 1, -1)) * 5e-324 * 2.0 ** rng.randint(0, 80)
        elif kind < 0.6:
            c = rng.choice((0.0, -0.0))
        else:
            c = rng.uniform(-2, 2) * 2.0 ** rng.randint(-1074, 1023)
        yield a, b, c


def test_fma64_rounds_once_at_the_exponent_extremes():
    _, call = _helpers("fma64")
    fma64 = call("fma64")
    for a, b, c in [*FMA64_EDGES, *extreme_triples(3000, 16)]:
        if not all(math.isfinite(v) for v in (a, b, c)):
            continue
        want = fraction_fma(a, b, c)
        assert f64_bits(fma64(a, b, c)) == f64_bits(want) == f64_bits(fma_exact_scalar(a, b, c)), (a, b, c)


#: zeros of both signs, infinities, NaN, the subnormal and normal extremes, the overflow threshold's
#: neighbours and ordinary values: every triple of them exercises the helper's special-value and
#: exponent-window branches (inf * 0, inf - inf, a finite product that overflows against an infinite addend)
FMA64_SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308,
                  -1.7976931348623157e308, 2.0 ** -1022, 2.0 ** 1023, 2.0 ** -537, 2.0 ** 512, 1e300, -1e-300,
                  1.0, -1.0, 1.5, 3.0]


def test_fma64_of_special_operands_matches_the_reference():
    """Every triple of FMA64_SPECIALS: the same bits as the reference's fma (any NaN for a NaN)."""
    _, call = _helpers("fma64")
    fma64 = call("fma64")
    for a, b, c in itertools.product(FMA64_SPECIALS, repeat=3):
        got, want = fma64(a, b, c), fma_exact_scalar(a, b, c)
        assert (math.isnan(got) and math.isnan(want)) or f64_bits(got) == f64_bits(want), (a, b, c, got, want)
