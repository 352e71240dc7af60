"""``atlas_web.numpy.jit`` on every available backend: results against NumPy computed here and against
eager evaluation of the same function (bit for bit where the docs say fusion keeps eager's bits), the
launches fusion leaves (elementwise chains as one pass, reductions computing their producers), the cache
per signature, and the errors of functions that cannot be traced."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError

from atlas_web.numpy.codegen_fused import EPILOGUE_MAX

from .helpers import check

RNG = np.random.default_rng(1414)


def data(shape, dtype=np.float32, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


def kinds(fn, *args):
    return [kind for kind, _ in fn.trace_steps(*args)]


def same_bits(actual, expected):
    a, e = actual.to_host(), expected.to_host()
    assert a.dtype == e.dtype and a.shape == e.shape
    assert a.tobytes() == e.tobytes(), (a, e)


def test_relu_and_dot_is_one_pass_and_one_reduction(device):
    xs = np.linspace(-1, 1, 5000, dtype=np.float32)

    def f(x):
        y = anp.relu(2 * x - 0.5)
        return y, anp.dot(y, x)
    x = anp.array(xs, device=device)
    fast = anp.jit(f)
    y, d = fast(x)
    y_np = np.maximum(np.float32(2) * xs - np.float32(0.5), np.float32(0))
    check(y, y_np)
    check(d, np.dot(y_np, xs), rtol=1e-5)
    y_eager, d_eager = f(x)
    same_bits(y, y_eager)
    same_bits(d, d_eager)
    assert kinds(fast, x) == ["FusedMapNode", "CoopReduceNode"]


def test_an_arithmetic_chain_is_one_launch_with_eagers_bits(device):
    def chain(x, y):
        z = (x * 1.5 + y) * (x - 0.25)
        z = anp.maximum(z, -1.0) / (y * y + 1.0)
        return anp.minimum(-z, 3.0) + abs(x)
    a, b = data((64, 33)), data((64, 33))
    x, y = anp.array(a, device=device), anp.array(b, device=device)
    fast = anp.jit(chain)
    out = fast(x, y)
    f32 = np.float32
    z = (a * f32(1.5) + b) * (a - f32(0.25))
    z = np.maximum(z, f32(-1)) / (b * b + f32(1))
    check(out, np.minimum(-z, f32(3)) + np.abs(a))
    same_bits(out, chain(x, y))
    assert kinds(fast, x, y) == ["FusedMapNode"]


def test_transcendentals_fuse_within_the_backends_accuracy(device):
    def f(x):
        return anp.tanh(anp.exp(-x * x)) + anp.sigmoid(x) * anp.silu(x) - anp.sqrt(abs(x)) + anp.log(x * x + 1)
    a = data((4097,))
    x = anp.array(a, device=device)
    fast = anp.jit(f)
    sig = 1 / (1 + np.exp(-a.astype(np.float64)))
    expected = (np.tanh(np.exp(-a.astype(np.float64) ** 2)) + sig * a * sig - np.sqrt(np.abs(a))
                + np.log(a.astype(np.float64) ** 2 + 1)).astype(np.float32)
    check(fast(x), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fast(x).to_host(), f(x).to_host(), rtol=1e-5, atol=1e-6)
    assert kinds(fast, x) == ["FusedMapNode"]


def test_reductions_over_axes_compute_their_producers(device):
    def f(x):
        centered = x - x.mean(axis=1, keepdims=True)
        return (centered * centered).sum(axis=1), anp.argmax(x * x - x, axis=0), (x * 2).max(axis=(0, 1))
    a = data((12, 40))
    x = anp.array(a, device=device)
    fast = anp.jit(f)
    s, arg, m = fast(x)
    c = a - a.mean(axis=1, keepdims=True, dtype=np.float32)
    check(s, (c * c).sum(axis=1), rtol=1e-5, atol=1e-6)
    check(arg, np.argmax(a * a - a, axis=0))
    check(m, (a * np.float32(2)).max())
    for got, eager in zip((s, arg, m), f(x)):
        same_bits(got, eager)
    # eager: 10 launches; jit: the mean's sum, two reductions computing their inputs (the mean's divide
    # and the centering inside the first), and the full reduction after its one map
    assert kinds(fast, x) == ["ReduceNode", "FusedReduceNode", "FusedReduceNode", "MapNode", "CoopReduceNode"]


def test_broadcasts_transposes_and_slices_read_inside_the_fused_pass(device):
    def f(x, b):
        y = anp.tanh(x) * 2.0
        return (y.T + b)[1:, ::2] - 1.0
    a, bias = data((6, 9)), data((6,))
    x, b = anp.array(a, device=device), anp.array(bias, device=device)
    fast = anp.jit(f)
    out = fast(x, b)
    check(out, ((np.tanh(a) * np.float32(2)).T + bias)[1:, ::2] - np.float32(1), rtol=1e-5, atol=1e-6)
    same_bits(out, f(x, b))
    # tanh, *2 and the transposed read in one pass; the slice of that (itself read strided) in a second
    assert kinds(fast, x, b) == ["FusedMapNode", "FusedMapNode"]


def test_comparisons_where_and_integer_types(device):
    def f(i, x):
        mask = i > 5
        return anp.where(mask, x * 0.5, -x), (i * 2 + 1).sum(axis=0), (i > 2)
    ints, a = RNG.integers(-10, 10, size=(7, 5)).astype(np.int32), data((7, 5))
    i, x = anp.array(ints, device=device), anp.array(a, device=device)
    fast = anp.jit(f)
    w, s, m = fast(i, x)
    check(w, np.where(ints > 5, a * np.float32(0.5), -a))
    check(s, (ints * 2 + 1).sum(axis=0))
    check(m, ints > 2)
    for got, eager in zip((w, s, m), f(i, x)):
        same_bits(got, eager)


def close64(actual, expected, rtol, atol):
    """A float32 result against NumPy's float64 formula."""
    host = actual.to_host()
    assert host.dtype == np.float32 and host.shape == np.shape(expected)
    np.testing.assert_allclose(host.astype(np.float64), expected, rtol=rtol, atol=atol)


def test_matmul_with_an_elementwise_epilogue(device):
    """The bias add and the activation run in the GEMM's program (one launch), with eager's bits."""
    def layer(x, w, b):
        return anp.relu(x @ w + b)
    fast = anp.jit(layer)
    for m, k, n in ((5, 16, 7), (40, 16, 30)):   # 1,200 elements: past EPILOGUE_MAX, two launches
        xs, ws, bs = data((m, k)), data((k, n)), data((n,))
        x, w, b = (anp.array(v, device=device) for v in (xs, ws, bs))
        expected = np.maximum(xs.astype(np.float64) @ ws + bs, 0)
        close64(fast(x, w, b), expected, rtol=1e-5, atol=1e-5)
        same_bits(fast(x, w, b), layer(x, w, b))
        one = m * n <= EPILOGUE_MAX
        assert kinds(fast, x, w, b) == (["GemmEpilogueNode"] if one else ["GemmNode", "FusedMapNode"])
    assert m * n > EPILOGUE_MAX


def test_epilogues_false_keeps_the_gemm_and_its_consumers_apart(device):
    """jit(..., epilogues=False): the GEMM's launch, then the fused pass's, with the epilogue's bits."""
    def layer(x, w, b):
        return anp.relu(x @ w + b)
    x, w, b = (anp.array(v, device=device) for v in (data((5, 16)), data((16, 7)), data((7,))))
    apart, fused = anp.jit(layer, epilogues=False), anp.jit(epilogues=True)(layer)
    assert kinds(apart, x, w, b) == ["GemmNode", "FusedMapNode"] and kinds(fused, x, w, b) == ["GemmEpilogueNode"]
    same_bits(apart(x, w, b), fused(x, w, b))


def test_epilogues_of_batched_and_chained_matmuls(device):
    """A batched GEMM with a SiLU-gated epilogue, then a second layer reading the first's result: each GEMM
    takes its own epilogue; values against NumPy (float64) and eager's bits."""
    def mlp(x, w1, b1, w2):
        h = x @ w1 + b1
        h = anp.silu(h) * 0.5
        return anp.tanh(h @ w2) - 1.0
    xs, w1s, b1s, w2s = data((3, 4, 8)), data((3, 8, 6)), data((6,)), data((3, 6, 5))
    args = [anp.array(v, device=device) for v in (xs, w1s, b1s, w2s)]
    fast = anp.jit(mlp)
    assert kinds(fast, *args) == ["GemmEpilogueNode", "GemmEpilogueNode"]
    h = xs.astype(np.float64) @ w1s + b1s
    h = h / (1 + np.exp(-h)) * 0.5
    close64(fast(*args), np.tanh(h @ w2s) - 1.0, rtol=1e-5, atol=2e-5)
    same_bits(fast(*args), mlp(*args))


def test_a_matmul_result_read_elsewhere_is_still_stored(device):
    """C returned and read by a second, later consumer: the epilogue's program still writes C; a reading
    that is not element for element (a transpose) keeps the GEMM apart."""
    def both(x, w, b):
        y = x @ w
        return anp.maximum(y + b, 0.0), y, anp.sum(y * 2.0)

    def transposed(x, w):
        y = x @ w
        return anp.transpose(y) + 1.0
    xs, ws, bs = data((6, 5)), data((5, 6)), data((6,))
    x, w, b = (anp.array(v, device=device) for v in (xs, ws, bs))
    fast = anp.jit(both)
    assert kinds(fast, x, w, b)[0] == "GemmEpilogueNode"
    y = xs.astype(np.float64) @ ws
    for got, want in zip(fast(x, w, b), (np.maximum(y + bs, 0), y, np.sum(y * 2.0))):
        close64(got, want, rtol=1e-5, atol=1e-4)
    apart = anp.jit(transposed)
    assert kinds(apart, x, w) == ["GemmNode", "FusedMapNode"]
    close64(apart(x, w), y.T + 1.0, rtol=1e-5, atol=1e-5)


def test_traced_once_per_signature_then_only_launched(device):
    calls = []

    @anp.jit
    def f(x, scale):
        calls.append(x.shape)
        return x * scale + 1.0
    a = data((10,))
    x = anp.array(a, device=device)
    for _ in range(3):
        check(f(x, 2.0), a * np.float32(2) + np.float32(1))
    assert len(calls) == 1
    check(f(anp.array(a[:4], device=device), 2.0), a[:4] * np.float32(2) + np.float32(1))
    check(f(x, 3.0), a * np.float32(3) + np.float32(1))
    if device.supports("ADD", anp.float64):
        wide = a.astype(np.float64)
        check(f(anp.array(wide, device=device), 2.0), wide * 2 + 1)
    assert len(calls) in (3, 4)
    y = anp.array(data((10,)), device=device)
    check(f(y, 2.0), y.to_host() * np.float32(2) + np.float32(1))   # new values, same program
    assert len(calls) in (3, 4)
    check(f(x, scale=2.0), a * np.float32(2) + np.float32(1))        # a keyword: its own signature
    check(f(x, scale=2.0), a * np.float32(2) + np.float32(1))
    assert len(calls) in (4, 5)
    with pytest.raises(ArrayError, match="positional"):
        f(x, scale=x)


def test_results_may_be_inputs_constants_and_nested_structures(device):
    table = np.arange(6, dtype=np.float32)

    @anp.jit
    def f(x):
        const = anp.array(table, device=x.device)
        return x, [x + const, (anp.concatenate([x, const]), x.reshape(2, 3))]
    a = data((6,))
    x = anp.array(a, device=device)
    same, (plus, (joined, shaped)) = f(x)
    check(same, a)
    check(plus, a + table)
    check(joined, np.concatenate([a, table]))
    check(shaped, a.reshape(2, 3))
    check(f(anp.array(table, device=device))[1][0], table + table)


def test_functions_that_look_at_values_or_return_other_things_are_refused(device):
    x = anp.array(data((4,)), device=device)
    with pytest.raises(ArrayError, match=r"jit\(branchy\).*not known while tracing"):
        @anp.jit
        def branchy(x):
            return x if (x.sum() > 0) else -x
        branchy(x)
    with pytest.raises(ArrayError, match="returned float"):
        anp.jit(lambda x: 1.0)(x)
    with pytest.raises(ArrayError, match="neither an Array nor hashable"):
        anp.jit(lambda x, opts: x)(x, [1, 2])


def test_argmax_over_a_long_flat_array_stays_on_the_device(device):
    logits = data((1001,))
    logits[[17, 900]] = 5.0    # a tie: the first wins
    x = anp.array(logits, device=device)
    greedy = anp.jit(lambda v: (anp.argmax(v), anp.argmin(v, keepdims=True)))
    best, worst = greedy(x)
    check(best, np.argmax(logits))
    check(worst, np.argmin(logits, keepdims=True))
    assert best.item() == 17
