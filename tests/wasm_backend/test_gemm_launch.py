"""GEMM and BatchedGEMM launched on the wasm backend: shapes around the kernel's blocks, threads, scratch.

The conformance suite checks the rows' cases on every backend; these check what only the wasm kernel has:
sizes just around its register tile and cache blocks (through a launch, with the default tiling), results
bit-identical on 1, 2 and 3 threads with the threaded path taken, the packing scratch (per-launch area, and
the threads' arena scratch) leaving every user buffer alone, and batch strides.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, MOV_IMM, Register, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from wasm_backend.lowering.coop_gemm_kernel import DEFAULT_TILING
from wasm_backend.thread_policy import PARALLEL_GEMM_THRESHOLD

from tests.wasm_backend.thread_counts import THREAD_COUNTS

GUARD = b"\xa5" * 256


def _gamma(k: int) -> float:
    u = float(np.finfo(np.float32).eps) / 2
    return (k + 2) * u / (1 - (k + 2) * u)


def launch(backend, name: str, arrays: dict[str, np.ndarray], **fields) -> tuple[np.ndarray, list[bytes]]:
    """Run one ``name`` instruction over buffers holding ``arrays`` (c, a, b), each buffer between two guard
    buffers; returns (C after, the guard buffers' bytes after)."""
    handles, guards = {}, [backend.allocate_buffer(len(GUARD))]
    for key in ("c", "a", "b"):
        handles[key] = backend.allocate_buffer(max(arrays[key].nbytes, 4))
        backend.copy_to_buffer(handles[key], arrays[key].tobytes())
        guards.append(backend.allocate_buffer(len(GUARD)))
    for guard in guards:
        backend.copy_to_buffer(guard, GUARD)
    builder = ProgramBuilder()
    builder.add(INSTRUCTION_CLASSES[name](**{key: Address.BufferOffset(int(h), 0) for key, h in handles.items()},
                                          **fields))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    out = np.frombuffer(bytes(backend.copy_from_buffer(handles["c"])), arrays["c"].dtype)[:arrays["c"].size].copy()
    after = [bytes(backend.copy_from_buffer(guard)) for guard in guards]
    assert bytes(backend.copy_from_buffer(handles["a"]))[:arrays["a"].nbytes] == arrays["a"].tobytes()
    assert bytes(backend.copy_from_buffer(handles["b"]))[:arrays["b"].nbytes] == arrays["b"].tobytes()
    for handle in (*handles.values(), *guards):
        backend.free_buffer(handle)
    return out, after


def gemm_case(backend, m, n, k, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    out, guards = launch(backend, "GEMM", {"c": c, "a": a, "b": b}, m=m, n=n, k=k, alpha=alpha, beta=beta,
                         trans_a=trans_a, trans_b=trans_b)
    assert all(guard == GUARD for guard in guards), "a buffer around the operands changed"
    am = (a.T if trans_a else a).astype(np.float64)
    bm = (b.T if trans_b else b).astype(np.float64)
    expected = alpha * (am @ bm) + beta * c.astype(np.float64)
    bound = _gamma(k) * (abs(alpha) * (np.abs(am) @ np.abs(bm)) + abs(beta) * np.abs(c.astype(np.float64)))
    got = out.reshape(m, n).astype(np.float64)
    assert np.all(np.abs(got - expected) <= bound), np.abs(got - expected).max()
    return out


T = DEFAULT_TILING


@pytest.mark.parametrize("m,n,k", [
    (T.mr - 1, T.nr + 1, T.kc + 1), (T.mc + 1, T.nr - 1, T.kc - 1), (T.mc - 1, 2 * T.nr + 3, 2 * T.kc + 5),
    (1, 3 * T.nr, T.kc), (2 * T.mc + T.mr + 1, 1, 7),
])
def test_sizes_around_the_blocks(backends, m, n, k):
    gemm_case(backends[1], m, n, k, alpha=0.5, beta=1.25, trans_b=(m % 2 == 1))


def test_threads_give_the_bits_of_one_thread(backends):
    side = round(PARALLEL_GEMM_THRESHOLD ** (1 / 3)) + 3  # just above the threshold, not a multiple of a tile
    results = {}
    for threads in THREAD_COUNTS:
        before = backends[threads].device_info()["parallel_dispatches"]
        results[threads] = gemm_case(backends[threads], side, side, side, beta=0.5, trans_a=True).tobytes()
        dispatched = backends[threads].device_info()["parallel_dispatches"] - before
        assert dispatched == (1 if threads > 1 else 0)
    assert len(set(results.values())) == 1


def test_batched_gemm_with_strides(backends):
    batch, m, n, k = 3, 9, 21, 13
    stride_a, stride_b, stride_c = m * k + 5, k * n + 2, m * n + 7
    rng = np.random.default_rng(3)
    a = rng.standard_normal(batch * stride_a).astype(np.float32)
    b = rng.standard_normal(batch * stride_b).astype(np.float32)
    c = rng.standard_normal(batch * stride_c).astype(np.float32)
    out, guards = launch(backends[1], "BatchedGEMM", {"c": c, "a": a, "b": b}, batch=batch, m=m, n=n, k=k,
                         beta=2.0, stride_a=stride_a, stride_b=stride_b, stride_c=stride_c)
    assert all(guard == GUARD for guard in guards)
    for i in range(batch):
        am = a[i * stride_a:i * stride_a + m * k].reshape(m, k).astype(np.float64)
        bm = b[i * stride_b:i * stride_b + k * n].reshape(k, n).astype(np.float64)
        cm = c[i * stride_c:i * stride_c + m * n].reshape(m, n).astype(np.float64)
        got = out[i * stride_c:i * stride_c + m * n].reshape(m, n)
        assert np.allclose(got, am @ bm + 2.0 * cm, rtol=1e-5, atol=1e-4)
        gap = slice(i * stride_c + m * n, (i + 1) * stride_c)
        assert out[gap].tobytes() == c[gap].tobytes(), "the gap between batch items changed"


def test_f64_gemm(backends):
    rng = np.random.default_rng(5)
    m, n, k = 7, 19, 33
    a, b, c = (rng.standard_normal(size) for size in (m * k, k * n, m * n))
    out, _ = launch(backends[1], "GEMM", {"c": c, "a": a, "b": b}, m=m, n=n, k=k, beta=-1.0, ty=Type.F64)
    expected = a.reshape(m, k) @ b.reshape(k, n) - c.reshape(m, n)
    assert np.allclose(out.reshape(m, n), expected, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [(1, 300, 50, False, False), (300, 1, 50, False, False),
                                                   (1, 300, 50, True, True), (300, 1, 50, True, True)])
def test_gemv_on_threads_gives_the_bits_of_one_thread(backends, monkeypatch, m, n, k, trans_a, trans_b):
    """GEMV shapes (their own kernel) cut over the threads: the threshold lowered so a small one is cut."""
    monkeypatch.setattr("wasm_backend.lowering.coop_gemm.PARALLEL_GEMM_THRESHOLD", 1 << 12)
    results = set()
    for threads in THREAD_COUNTS:
        before = backends[threads].device_info()["parallel_dispatches"]
        results.add(gemm_case(backends[threads], m, n, k, alpha=2.0, beta=-1.0, trans_a=trans_a,
                              trans_b=trans_b).tobytes())
        assert backends[threads].device_info()["parallel_dispatches"] - before == (1 if threads > 1 else 0)
    assert len(results) == 1


@pytest.mark.parametrize("threshold,cut", [(1 << 12, "rows"), (1 << 16, "items")])
def test_batched_gemm_on_threads_takes_scratch_once_and_gives_it_back(backends, monkeypatch, threshold, cut):
    """Items at the threshold: each item's rows over the threads (one dispatch per item); items under it whose
    total reaches it: whole items over the threads (one dispatch)."""
    monkeypatch.setattr("wasm_backend.lowering.coop_gemm.PARALLEL_GEMM_THRESHOLD", threshold)
    batch, m, n, k = 5, 40, 24, 16 if cut == "rows" else 17  # not the other case's program (compiled, cached)
    rng = np.random.default_rng(9)
    arrays = {"c": np.zeros(batch * m * n, np.float32), "a": rng.standard_normal(batch * m * k).astype(np.float32),
              "b": rng.standard_normal(batch * k * n).astype(np.float32)}
    results = set()
    for threads in THREAD_COUNTS:
        backend = backends[threads]
        launch(backend, "BatchedGEMM", arrays, batch=batch, m=m, n=n, k=k)  # the per-launch area sized
        before, free = backend.device_info(), backend._memory.arena.free_bytes
        taken = []
        scratch = backend._memory.scratch
        monkeypatch.setattr(backend._memory, "scratch", lambda size, what: taken.append(what) or scratch(size, what))
        out, _ = launch(backend, "BatchedGEMM", arrays, batch=batch, m=m, n=n, k=k)
        monkeypatch.undo()
        monkeypatch.setattr("wasm_backend.lowering.coop_gemm.PARALLEL_GEMM_THRESHOLD", threshold)
        after = backend.device_info()
        dispatches = (batch if cut == "rows" else 1) if threads > 1 else 0
        assert after["parallel_dispatches"] - before["parallel_dispatches"] == dispatches
        assert taken.count("GEMM packing scratch") == (1 if threads > 1 else 0), taken
        assert backend._memory.arena.free_bytes == free, "scratch left taken after the launch"
        results.add(out.tobytes())
    expected = np.einsum("bij,bjk->bik", arrays["a"].reshape(batch, m, k).astype(np.float64),
                         arrays["b"].reshape(batch, k, n).astype(np.float64))
    assert np.allclose(np.frombuffer(results.pop(), np.float32).reshape(batch, m, n), expected, rtol=1e-5, atol=1e-4)
    assert not results


def test_k_zero_gives_beta_times_c_whatever_alpha(backends):
    """k == 0: C = beta * C as the reference says: alpha times the empty sum is not formed."""
    c = np.array([1.0, -2.0, 0.0, -0.0, 3.5, np.nan], np.float32)
    empty = np.zeros(0, np.float32)
    for m, n in ((2, 3), (1, 6), (6, 1)):  # the blocked kernel and both GEMV forms
        out, _ = launch(backends[1], "GEMM", {"c": c, "a": empty, "b": empty}, m=m, n=n, k=0, alpha=float("inf"),
                        beta=0.5)
        assert np.array_equal(out, c * np.float32(0.5), equal_nan=True)
        out, _ = launch(backends[1], "GEMM", {"c": c, "a": empty, "b": empty}, m=m, n=n, k=0, alpha=-1.0, beta=0.0)
        assert not out.any() and not np.signbit(out).any()


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [(T.mr + 1, T.nr + 3, T.kc + 1, False, True),
                                                   (T.mc + 3, 5, 9, True, False), (1, 40, 7, False, False)])
def test_mixed_precision_f16_inputs_around_the_blocks(backends, m, n, k, trans_a, trans_b):
    """F16 A and B converted while packed (also a GEMV shape: the blocked kernel takes it), f32 C."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(m * k).astype(np.float16)
    b = rng.standard_normal(k * n).astype(np.float16)
    c = rng.standard_normal(m * n).astype(np.float32)
    out, guards = launch(backends[1], "MixedPrecisionGEMM", {"c": c, "a": a, "b": b}, m=m, n=n, k=k, beta=0.5,
                         trans_a=trans_a, trans_b=trans_b, ty=Type.F16)
    assert all(guard == GUARD for guard in guards)
    am = a.astype(np.float64).reshape((k, m) if trans_a else (m, k))
    bm = b.astype(np.float64).reshape((n, k) if trans_b else (k, n))
    am, bm = (am.T if trans_a else am), (bm.T if trans_b else bm)
    expected = am @ bm + 0.5 * c.astype(np.float64).reshape(m, n)
    bound = _gamma(k) * (np.abs(am) @ np.abs(bm) + 0.5 * np.abs(c.astype(np.float64).reshape(m, n)))
    assert np.all(np.abs(out.reshape(m, n) - expected) <= bound)


def test_operands_are_checked_in_operand_order_as_the_reference_checks_them(backends):
    """C (the first operand) and A both too short: the trap is C's, on wasm as on the reference."""
    from atlas_web import AtlasTrap
    from atlas_web.reference import CpuBackend
    messages = []
    for backend in (CpuBackend(), backends[1]):
        handles = {key: backend.allocate_buffer(size) for key, size in (("c", 8), ("a", 8), ("b", 64))}
        builder = ProgramBuilder()  # addresses in registers: checked at run time, not by the verifier
        for r, handle in enumerate(handles.values()):
            builder.add(MOV_IMM(dst=Register(10 + r), value=int(handle) << 32, ty=Type.U64))
        builder.add(INSTRUCTION_CLASSES["GEMM"](**{key: Address.RegisterIndirect(Register(10 + r), 0)
                                                   for r, key in enumerate(handles)}, m=4, n=4, k=4))
        builder.add(EXIT())
        with pytest.raises(AtlasTrap) as trap:
            backend.execute_program(builder.build(), LaunchConfig())
        messages.append(re.sub(r"handle \d+", "handle H", str(trap.value)))  # the backends number handles apart
        for handle in handles.values():
            backend.free_buffer(handle)
    assert messages[0] == messages[1] and ": c: " in messages[0], messages
