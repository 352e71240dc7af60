"""RoPE and KVCacheUpdate launched on the wasm backend (coop_rope, coop_kvcache), on what only the wasm kernels
have: head_dim around the vector width for both pairings (vectors, then the scalar tail of pairs), in place, a
large position offset (the f64 table); KVCacheUpdate's bytes as they are (NaN payloads) through memory.copy and
the trap of a position past the cache (known when the module is built) leaving the cache unchanged and the backend
usable. Results are compared with NumPy within the contract's bound (the conformance suite's ``compare``)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, AtlasTrap, LaunchConfig, ProgramBuilder, TrapCode
from atlas_web.isa import EXIT, OPCODE_TABLE, KVCacheUpdate, RoPE, Type
from wasm_backend import WasmBackend

from tests.conformance.attention_cases import AttentionCase, compare
from tests.conformance.matrix_cases import decode_array, encode_array

ROPE_INFO = next(info for info in OPCODE_TABLE if info.name == "RoPE")


@pytest.fixture(scope="module")
def wasm_backend():
    backend = WasmBackend()
    yield backend
    backend.close()


def _buffer(backend, data: bytes) -> int:
    handle = int(backend.allocate_buffer(max(4, len(data))))
    backend.copy_to_buffer(handle, data)
    return handle


def _run(backend, *instructions) -> None:
    builder = ProgramBuilder()
    for instr in instructions:
        builder.add(instr)
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("head_dim", [2, 6, 8, 10, 18, 64])
@pytest.mark.parametrize("ty", [Type.F16, Type.BF16, Type.F32, Type.F64], ids=lambda t: t.name)
def test_rope_rows_around_the_vector_width(wasm_backend, ty, head_dim, interleaved, in_place):
    batch, seq, heads, position = 2, 3, 3, 40000
    rng = np.random.default_rng(head_dim)
    x = decode_array(ty, encode_array(ty, rng.uniform(-3, 3, batch * seq * heads * head_dim)))
    freqs = decode_array(ty, encode_array(ty, 10000.0 ** (-np.arange(head_dim // 2) / (head_dim // 2))))
    src = _buffer(wasm_backend, encode_array(ty, x))
    dst = src if in_place else _buffer(wasm_backend, bytes(len(x) * ty.size_bytes()))
    table = _buffer(wasm_backend, encode_array(ty, freqs))
    fields = dict(batch=batch, seq_len=seq, heads=heads, head_dim=head_dim, position=position,
                  interleaved=interleaved)
    _run(wasm_backend, RoPE(output=Address.BufferOffset(dst), input=Address.BufferOffset(src),
                            freqs=Address.BufferOffset(table), **fields, ty=ty))
    raw = bytes(wasm_backend.copy_from_buffer(dst))[:len(x) * ty.size_bytes()]
    case = AttentionCase("rope", ROPE_INFO, ty, fields)
    bad = compare(case, {"input": x, "freqs": freqs, "output": x}, raw)
    assert not bad, bad[:3]


def test_kv_cache_update_copies_bytes_and_traps_past_the_cache(wasm_backend):
    batch, heads, dim, max_seq = 2, 3, 5, 4
    cache_bytes = np.arange(batch * heads * max_seq * dim, dtype=np.uint32).tobytes()
    new = np.full(batch * heads * dim, 0x7FC01234, dtype=np.uint32)   # a NaN with a payload
    cache, source = _buffer(wasm_backend, cache_bytes), _buffer(wasm_backend, new.tobytes())
    a = dict(cache=Address.BufferOffset(cache), new_kv=Address.BufferOffset(source))
    with pytest.raises(AtlasTrap) as caught:
        _run(wasm_backend, KVCacheUpdate(**a, position=4, batch=batch, heads=heads, head_dim=dim, max_seq=max_seq))
    assert caught.value.code is TrapCode.OUT_OF_BOUNDS and "position = 4 is not below 4" in str(caught.value)
    assert bytes(wasm_backend.copy_from_buffer(cache)) == cache_bytes
    _run(wasm_backend, KVCacheUpdate(**a, position=2, batch=batch, heads=heads, head_dim=dim, max_seq=max_seq))
    got = np.frombuffer(bytes(wasm_backend.copy_from_buffer(cache)), dtype=np.uint32).reshape(
        batch, heads, max_seq, dim)
    want = np.frombuffer(cache_bytes, dtype=np.uint32).reshape(batch, heads, max_seq, dim).copy()
    want[:, :, 2] = 0x7FC01234
    assert np.array_equal(got, want)
