"""The norms, LayerScale, Attention, FlashAttention, Conv2D and TensorContract on several threads (issue 11 leftover): a
launch past the row's threshold goes through ``env.parallel_gemm`` (one parallel dispatch on a backend with
threads, none on one thread), gives the bits of one thread on every thread count, and keeps the contract against
NumPy (the conformance suite's ``compare``); one below the threshold stays on one thread. The shapes are the
smallest past each threshold (``thread_policy``), with ragged ranges (unit counts not multiples of the threads)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import OPCODE_TABLE, LayerScale, Type
from wasm_backend.lowering.coop_attention import attention_parallel
from wasm_backend.lowering.coop_contract import contract_parallel
from wasm_backend.lowering.coop_conv import conv_parallel
from wasm_backend.lowering.coop_layer_scale import layer_scale_parallel
from wasm_backend.lowering.coop_norm import norm_parallel

from tests.conformance import attention_cases, contract_cases, conv_fft_cases, norm_cases
from tests.conformance.matrix_cases import MatrixCase
from tests.wasm_backend.thread_counts import THREAD_COUNTS

ROWS = {info.name: info for info in OPCODE_TABLE}


def _norm(name: str, **shape) -> norm_cases.NormCase:
    fields = {op.name: shape[op.name] for op in ROWS[name].operands if op.name in shape}
    return norm_cases.NormCase(f"{name}.threads", ROWS[name], Type.F32, {**fields, "eps": norm_cases.EPS})


def _attention(name: str, causal: bool, **extra) -> attention_cases.AttentionCase:
    fields = dict(batch=1, heads=5, seq_len=200, head_dim=64, kv_len=200, causal=causal, kv_heads=5, max_seq=200,
                  **extra)
    return attention_cases.AttentionCase(f"{name}.threads", ROWS[name], Type.F32, fields)


def _contract(shape_a, shape_b, pairs) -> MatrixCase:
    fields = dict(shape_a=shape_a, shape_b=shape_b, contract_dims=pairs, alpha=1.0, beta=0.5)
    return MatrixCase("TensorContract.threads", ROWS["TensorContract"], Type.F32, fields)


def _conv(ty: Type, batch, cin, cout, size, kernel, groups=1, bias=True) -> MatrixCase:
    fields = conv_fft_cases.conv_fields(batch, cin, cout, size, size + 1, kernel, kernel, padding=(1, 1),
                                        groups=groups, bias=bias)
    return conv_fft_cases.ConvCase(f"Conv2D.{ty.name}.threads", ROWS["Conv2D"], ty, fields)


def _layer_scale(rows: int, n: int) -> MatrixCase:
    return MatrixCase("LayerScale.threads", ROWS["LayerScale"], Type.F32, dict(rows=rows, n=n))


# each run: (inputs, output, trap, a function listing where the output breaks the contract against NumPy)
def _runner(run, compare):
    """A run of the family whose cases ``run(backend, case)`` launches and ``compare(case, inputs, out)`` checks."""
    def run_case(backend, case):
        inputs, out, trap = run(backend, case)
        return inputs, out, trap, lambda: compare(case, inputs, out)
    return run_case


_run_norm = _runner(norm_cases.run_norm, norm_cases.compare)
_run_attention = _runner(attention_cases.run_attention, attention_cases.compare)
_run_contract = _runner(contract_cases.run_contract, contract_cases.compare)
_run_conv = _runner(conv_fft_cases.run_case, conv_fft_cases.compare)


def _run_layer_scale(backend, case):
    """LayerScale's products are the type's one rounding each: compared with NumPy's f32 product bit for bit."""
    rows, n = case.fields["rows"], case.fields["n"]
    rng = np.random.default_rng(3)
    x, scale = rng.uniform(-4, 4, (rows, n)).astype(np.float32), rng.uniform(-4, 4, n).astype(np.float32)
    handles = [backend.allocate_typed(a.ravel(), Type.F32) for a in (np.zeros_like(x), x, scale)]
    addresses = {name: Address.BufferOffset(h) for name, h in zip(("output", "input", "scale"), handles)}
    backend.execute_program(ProgramBuilder().add(LayerScale(**addresses, rows=rows, n=n)).build(), LaunchConfig())
    got = np.asarray(backend.copy_typed_from(handles[0], Type.F32, rows * n), dtype=np.float32)
    for handle in handles:
        backend.free_buffer(handle)
    want = (x * scale).ravel()
    return None, got, None, lambda: [] if np.array_equal(got, want) else [int(np.flatnonzero(got != want)[0])]


#: label -> (case, its run, its instruction's parallel cut)
THREADED = {
    "LayerNorm": (_norm("LayerNorm", rows=301, n=3500), _run_norm, norm_parallel),
    "RMSNorm": (_norm("RMSNorm", rows=301, n=3500), _run_norm, norm_parallel),
    "GroupNorm": (_norm("GroupNorm", batch=3, channels=6, groups=3, spatial=60000), _run_norm, norm_parallel),
    "BatchNorm": (_norm("BatchNorm", batch=3, channels=5, spatial=140000), _run_norm, norm_parallel),
    "LayerScale": (_layer_scale(67, 32000), _run_layer_scale, layer_scale_parallel),
    "Attention": (_attention("Attention", False), _run_attention, attention_parallel),
    "Attention.causal": (_attention("Attention", True), _run_attention, attention_parallel),
    "FlashAttention": (_attention("FlashAttention", True, block_size=48), _run_attention, attention_parallel),
    # 44 channels a group: ragged ranges of whole register tiles; two items; F16 rounds each thread's rows
    "Conv2D": (_conv(Type.F32, 2, 16, 44, 45, 3), _run_conv, conv_parallel),
    "Conv2D.groups": (_conv(Type.F32, 1, 24, 88, 45, 3, groups=2, bias=False), _run_conv, conv_parallel),
    "Conv2D.F16": (_conv(Type.F16, 1, 16, 44, 64, 3), _run_conv, conv_parallel),
    "TensorContract": (_contract((130, 4, 250), (250, 160), ((2, 0),)), _run_contract, contract_parallel),
    "TensorContract.copied": (_contract((130, 250, 4), (4, 160, 250), ((1, 2), (2, 0))), _run_contract,
                              contract_parallel),
}


@pytest.mark.parametrize("label", sorted(THREADED))
def test_threads_give_the_bits_of_one_thread_within_the_contract(backends, label):
    case, run, cut = THREADED[label]
    assert cut(case.probe()) is not None, "the shape is below the threshold: nothing would be threaded"
    results = set()
    for threads in THREAD_COUNTS:
        before = backends[threads].device_info()["parallel_dispatches"]
        _, got, trap, bad = run(backends[threads], case)
        assert trap is None
        assert backends[threads].device_info()["parallel_dispatches"] - before == (1 if threads > 1 else 0)
        results.add(np.asarray(got).tobytes())
        problems = bad()
        assert not problems, f"{label} on {threads} threads: {len(problems)} outside the bound, first {problems[:3]}"
    assert len(results) == 1


def test_below_the_thresholds_stays_on_one_thread(backends):
    attention = _attention("Attention", False)
    small = [_norm("LayerNorm", rows=3, n=100), _layer_scale(3, 100),
             attention_cases.AttentionCase("Attention.small", ROWS["Attention"], Type.F32,
                                           dict(attention.fields, seq_len=16, kv_len=16, max_seq=16)),
             _contract((3, 4), (4, 5), ((1, 0),))]
    runs = (_run_norm, _run_layer_scale, _run_attention, _run_contract)
    for case, run in zip(small, runs):
        before = backends[2].device_info()["parallel_dispatches"]
        _, _, trap, bad = run(backends[2], case)
        assert trap is None and not bad()
        assert backends[2].device_info()["parallel_dispatches"] == before, case.name


def test_one_unit_is_not_cut(backends):
    """One row of 2^21 elements: nothing to share between threads."""
    case = _norm("RMSNorm", rows=1, n=1 << 21)
    assert norm_parallel(case.probe()) is None
    before = backends[2].device_info()["parallel_dispatches"]
    _, got, trap, bad = _run_norm(backends[2], case)
    assert trap is None and not bad() and backends[2].device_info()["parallel_dispatches"] == before
