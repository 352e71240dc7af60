"""Attention and FlashAttention launched on the wasm backend (coop_attention), on what only the wasm kernel has:
several blocks of query rows (Attention's 64, FlashAttention's block_size) with a short last one, several key
blocks with a short last one, causal P.V split into GEMM blocks and row-by-row diagonal blocks, head_dim off the
vector width, grouped-query heads, a NaN in a value no query of a causal launch sees (it must not be read), and
the bytes after the output left as they were. Results are compared with NumPy within the contract's bound (the
conformance suite's ``compare``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, OPCODE_TABLE, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from wasm_backend import WasmBackend

from tests.conformance.attention_cases import AttentionCase, compare
from tests.conformance.matrix_cases import decode_array, encode_array

INFO = {info.name: info for info in OPCODE_TABLE if info.name in ("Attention", "FlashAttention")}
GUARD = 64   # bytes after the output that must keep their value


@pytest.fixture(scope="module")
def wasm_backend():
    backend = WasmBackend()
    yield backend
    backend.close()


def _attend(backend, name: str, arrays: dict, fields: dict) -> bytes:
    handles = {}
    for key, values in arrays.items():
        data = encode_array(Type.F32, values) + (b"\x5a" * GUARD if key == "output" else b"")
        handles[key] = int(backend.allocate_buffer(len(data)))
        backend.copy_to_buffer(handles[key], data)
    builder = ProgramBuilder()
    builder.add(INSTRUCTION_CLASSES[name](**{k: Address.BufferOffset(h) for k, h in handles.items()}, **fields))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    raw = bytes(backend.copy_from_buffer(handles["output"]))
    for handle in handles.values():
        backend.free_buffer(handle)
    assert raw[len(raw) - GUARD:] == b"\x5a" * GUARD, "the kernel wrote past its output"
    return raw[:len(raw) - GUARD]


def _inputs(fields: dict, seed: int = 5) -> dict:
    rng = np.random.default_rng(seed)
    batch, heads, seq, dim = fields["batch"], fields["heads"], fields["seq_len"], fields["head_dim"]
    kv = fields.get("kv_len") or seq
    kv_heads = fields.get("kv_heads") or heads
    slots = fields.get("max_seq") or kv
    values = lambda n: decode_array(Type.F32, encode_array(Type.F32, rng.uniform(-2, 2, n)))  # noqa: E731
    return dict(output=np.full(batch * heads * seq * dim, 7.0), query=values(batch * heads * seq * dim),
                key=values(batch * kv_heads * slots * dim), value=values(batch * kv_heads * slots * dim))


def _check(backend, name: str, fields: dict, arrays: dict | None = None) -> None:
    full = {**dict(kv_len=0, causal=False, kv_heads=0, max_seq=0), **fields}
    arrays = arrays or _inputs(full)
    raw = _attend(backend, name, arrays, full)
    bad = compare(AttentionCase(name, INFO[name], Type.F32, full), arrays, raw)
    assert not bad, f"{name} {fields}: {len(bad)} outside the bound, first {bad[:3]}"


SHAPES = [dict(batch=1, heads=2, seq_len=130, head_dim=7),
          dict(batch=1, heads=2, seq_len=130, head_dim=16, causal=True),
          dict(batch=2, heads=4, seq_len=3, head_dim=12, kv_len=150, kv_heads=2, max_seq=160, causal=True),
          dict(batch=1, heads=3, seq_len=70, head_dim=9, kv_len=200, kv_heads=1, causal=True),
          dict(batch=1, heads=1, seq_len=1, head_dim=64, kv_len=300)]


@pytest.mark.parametrize("fields", SHAPES, ids=lambda f: "-".join(f"{k}{int(v)}" for k, v in f.items()))
def test_attention_blocks(wasm_backend, fields):
    _check(wasm_backend, "Attention", fields)


@pytest.mark.parametrize("block_size", [3, 16, 64, 1000])
@pytest.mark.parametrize("fields", SHAPES[1:4], ids=lambda f: "-".join(f"{k}{int(v)}" for k, v in f.items()))
def test_flash_attention_blocks(wasm_backend, fields, block_size):
    _check(wasm_backend, "FlashAttention", dict(fields, block_size=block_size))


@pytest.mark.parametrize("name, extra", [("Attention", {}), ("FlashAttention", {"block_size": 8})])
def test_a_causal_query_never_reads_a_value_it_does_not_see(wasm_backend, name, extra):
    fields = dict(batch=1, heads=1, seq_len=100, head_dim=8, causal=True, **extra)
    arrays = _inputs(dict(fields, kv_len=0, kv_heads=0, max_seq=0))
    arrays["value"][90 * 8 + 3] = math.nan   # key 90: rows 0..89 do not see it
    arrays["key"][95 * 8] = math.nan
    full = dict(kv_len=0, kv_heads=0, max_seq=0, **fields)
    got = decode_array(Type.F32, _attend(wasm_backend, name, arrays, full)).reshape(100, 8)
    assert not np.isnan(got[:90]).any()
    assert np.isnan(got[90:95, 3]).all() and not np.isnan(got[90:95, :3]).any() and np.isnan(got[95:]).all()
    _check(wasm_backend, name, fields, arrays)
