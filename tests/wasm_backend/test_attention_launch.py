"""Attention and FlashAttention launched on the wasm backend (coop_attention), on what only the wasm kernel has:
several blocks of query rows (Attention's 64, FlashAttention's block_size) with a short last one, several key
blocks with a short last one, causal P.V split into GEMM blocks and row-by-row diagonal blocks, head_dim off the
vector width, grouped-query heads, F16/BF16 through f32 scratch and F64, a NaN in a value no query of a causal
launch sees (it must not be read), and the bytes after the output left as they were. Results are compared with NumPy within the contract's bound (the
conformance suite's ``compare``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web.isa import Type
from wasm_backend import WasmBackend

from tests.conformance.attention_launch import DEFAULTS, attend, check_attention, random_inputs
from tests.conformance.matrix_cases import decode_array


@pytest.fixture(scope="module")
def wasm_backend():
    backend = WasmBackend()
    yield backend
    backend.close()


SHAPES = [dict(batch=1, heads=2, seq_len=130, head_dim=7),
          dict(batch=1, heads=2, seq_len=130, head_dim=16, causal=True),
          dict(batch=2, heads=4, seq_len=3, head_dim=12, kv_len=150, kv_heads=2, max_seq=160, causal=True),
          dict(batch=1, heads=3, seq_len=70, head_dim=9, kv_len=200, kv_heads=1, causal=True),
          dict(batch=1, heads=1, seq_len=1, head_dim=64, kv_len=300)]


@pytest.mark.parametrize("fields", SHAPES, ids=lambda f: "-".join(f"{k}{int(v)}" for k, v in f.items()))
def test_attention_blocks(wasm_backend, fields):
    check_attention(wasm_backend, "Attention", fields)


@pytest.mark.parametrize("block_size", [3, 16, 64, 1000])
@pytest.mark.parametrize("fields", SHAPES[1:4], ids=lambda f: "-".join(f"{k}{int(v)}" for k, v in f.items()))
def test_flash_attention_blocks(wasm_backend, fields, block_size):
    check_attention(wasm_backend, "FlashAttention", dict(fields, block_size=block_size))


@pytest.mark.parametrize("ty", [Type.F16, Type.BF16, Type.F64], ids=lambda t: t.name)
@pytest.mark.parametrize("name, extra", [("Attention", {}), ("FlashAttention", {"block_size": 16})])
@pytest.mark.parametrize("fields", SHAPES[:4], ids=lambda f: "-".join(f"{k}{int(v)}" for k, v in f.items()))
def test_other_types(wasm_backend, fields, name, extra, ty):
    """F16/BF16 through f32 (the GEMM packing converts Q and K, each key block's values and each query block's
    output rows pass through the scratch), F64 on f64x2."""
    check_attention(wasm_backend, name, {**fields, **extra}, ty=ty)


@pytest.mark.parametrize("name, extra", [("Attention", {}), ("FlashAttention", {"block_size": 8})])
def test_a_causal_query_never_reads_a_value_it_does_not_see(wasm_backend, name, extra):
    fields = dict(batch=1, heads=1, seq_len=100, head_dim=8, causal=True, **extra)
    full = {**DEFAULTS, **fields}
    arrays = random_inputs(full)
    arrays["value"][90 * 8 + 3] = math.nan   # key 90: rows 0..89 do not see it
    arrays["key"][95 * 8] = math.nan
    got = decode_array(Type.F32, attend(wasm_backend, name, arrays, full)).reshape(100, 8)
    assert not np.isnan(got[:90]).any()
    assert np.isnan(got[90:95, 3]).all() and not np.isnan(got[90:95, :3]).any() and np.isnan(got[95:]).all()
    check_attention(wasm_backend, name, fields, arrays)
