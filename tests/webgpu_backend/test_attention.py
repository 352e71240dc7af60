"""The WGSL attention kernels on what the conformance suite's layouts do not reach: a head_dim past the workgroup
(several output elements per invocation), several 64-key tiles with a short last one, a causal row that walks
only its keys (a NaN in a value or key it does not see is never read), grouped-query heads reading a cache longer
than kv_len, the bytes after the output kept; KVCacheUpdate with cache and new values in one buffer (WebGPU
copies only between two buffers: the rows are read and written back) and its trap before any write. Each within
the contract's bound of NumPy (tests/conformance/attention_cases)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, ProgramBuilder, TrapCode
from atlas_web.isa import Address, FlashAttention, KVCacheUpdate, MapOperation, ParallelMap, RoPE, Type
from webgpu_backend.wgsl.emitter import ShaderFeatures
from webgpu_backend.wgsl.kernels import kernel_for
from webgpu_backend.wgsl.kernels.attention import MAX_TILE

from tests.conformance.attention_launch import DEFAULTS, attend, check_attention, random_inputs
from tests.conformance.matrix_cases import decode_array

SHAPES = [dict(batch=1, heads=2, seq_len=5, head_dim=130),
          dict(batch=1, heads=2, seq_len=3, head_dim=12, kv_len=150, kv_heads=1, max_seq=160, causal=True),
          dict(batch=2, heads=1, seq_len=66, head_dim=3, causal=True)]


@pytest.mark.parametrize("name", ["Attention", "FlashAttention"])
@pytest.mark.parametrize("fields", SHAPES, ids=lambda f: "-".join(f"{k}{int(v)}" for k, v in f.items()))
def test_attention_tiles(webgpu, name, fields):
    extra = {"block_size": 16} if name == "FlashAttention" else {}
    check_attention(webgpu, name, {**fields, **extra})


def test_a_causal_row_never_reads_what_it_does_not_see(webgpu):
    fields = {**DEFAULTS, **dict(batch=1, heads=1, seq_len=80, head_dim=4, causal=True)}
    arrays = random_inputs(fields)
    arrays["value"][70 * 4 + 1] = math.nan
    arrays["key"][75 * 4] = math.nan
    got = decode_array(Type.F32, attend(webgpu, "Attention", arrays, fields)).reshape(80, 4)
    assert not np.isnan(got[:70]).any()
    assert np.isnan(got[70:75, 1]).all() and not np.isnan(got[70:75, 0]).any() and np.isnan(got[75:]).all()


def test_kv_cache_update_in_one_buffer_and_its_trap(webgpu):
    batch, heads, dim, max_seq = 2, 2, 3, 4
    cache_words = batch * heads * max_seq * dim
    words = np.arange(cache_words + batch * heads * dim, dtype=np.uint32) + 100
    handle = int(webgpu.allocate_buffer(words.nbytes))
    webgpu.copy_to_buffer(handle, words.tobytes())
    a = dict(cache=Address.BufferOffset(handle), new_kv=Address.BufferOffset(handle, 4 * cache_words))
    with pytest.raises(AtlasTrap) as caught:
        webgpu.execute_program(ProgramBuilder().add(KVCacheUpdate(**a, position=4, batch=batch, heads=heads,
                                                                  head_dim=dim, max_seq=max_seq)).build(),
                               LaunchConfig())
    assert caught.value.code is TrapCode.OUT_OF_BOUNDS and "position = 4 is not below 4" in str(caught.value)
    assert bytes(webgpu.copy_from_buffer(handle)) == words.tobytes()
    webgpu.execute_program(ProgramBuilder().add(KVCacheUpdate(**a, position=1, batch=batch, heads=heads, head_dim=dim,
                                                              max_seq=max_seq, ty=Type.U32)).build(), LaunchConfig())
    got = np.frombuffer(bytes(webgpu.copy_from_buffer(handle)), dtype=np.uint32)
    want = words.copy()
    cache = want[:cache_words].reshape(batch, heads, max_seq, dim)
    cache[:, :, 1] = words[cache_words:].reshape(batch, heads, dim)
    assert np.array_equal(got, want)
    webgpu.free_buffer(handle)


def _f32_launch(backend, instr_of, arrays: list[np.ndarray], out_count: int) -> np.ndarray:
    """The f32 output (``out_count`` elements) of ``instr_of(output, *inputs)`` with each array in its own buffer."""
    handles = []
    for values in [np.zeros(out_count, np.float32)] + arrays:
        handle = backend.allocate_buffer(max(4, values.nbytes))
        backend.copy_to_buffer(handle, values.astype(np.float32).tobytes())
        handles.append(handle)
    instr = instr_of(*(Address.BufferOffset(h, 0) for h in handles))
    backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
    out = np.frombuffer(bytes(backend.copy_from_buffer(handles[0])), np.float32)[:out_count].copy()
    for handle in handles:
        backend.free_buffer(handle)
    return out


def test_rope_angles_have_the_map_instructions_sin_and_cos_bits(webgpu):
    # RoPE's sin_cos_f32 (one range reduction for both) must give sin_f32's and cos_f32's bits, the helpers of
    # ParallelMap Sin/Cos: token 1 (angle = 1 * freqs[p], exact) of pairs (1, 0) comes out as (cos, sin) exactly
    angles = np.array([0.5, -0.5, 0.785398, 0.7853982, -0.7853982, 1.0, 2.5, -3.14159274, 4.0, 100.0, -1234.5,
                       1e4, 3e7, -8.5e11, 1e20, 2.0 ** -100, math.pi / 2, 7 * math.pi / 4, math.nan, math.inf,
                       -math.inf], np.float32)
    half = len(angles)
    x = np.zeros((2, 2 * half), np.float32)
    x[1, :half] = 1.0
    got = _f32_launch(webgpu, lambda out, inp, freqs: RoPE(out, inp, freqs, batch=1, seq_len=2, heads=1,
                                                           head_dim=2 * half),
                      [x.reshape(-1), angles], x.size).reshape(2, 2 * half)
    for operation, rope_half in ((MapOperation.Cos, got[1, :half]), (MapOperation.Sin, got[1, half:])):
        want = _f32_launch(webgpu, lambda out, src, op=operation: ParallelMap(out, src, half, op), [angles], half)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(rope_half), nan), operation
        assert np.array_equal(rope_half[~nan].view(np.uint32), want[~nan].view(np.uint32)), operation


@pytest.mark.parametrize("block_size", [5, 300])
def test_flash_attention_tiles_of_block_size_keys(webgpu, block_size):
    # a tile of 5 keys (31 tiles over kv_len 150, a short last one) and one of 300 (held to MAX_TILE keys)
    check_attention(webgpu, "FlashAttention", dict(batch=1, heads=2, seq_len=3, head_dim=12, kv_len=150,
                                                   kv_heads=1, max_seq=160, causal=True, block_size=block_size))


def _workgroup_bytes(source: str) -> int:
    """The bytes of the ``var<workgroup>`` arrays and scalars a WGSL source declares (4-byte elements)."""
    total = 0
    for size in re.findall(r"var<workgroup> \w+: (?:array<\w+, (\d+)>|\w+);", source):
        total += 4 * (int(size) if size else 1)
    return total


@pytest.mark.parametrize("head_dim", [16, 200])
def test_flash_attention_workgroup_memory_is_set_by_block_size_and_head_dim(head_dim):
    fields = dict(batch=1, heads=2, seq_len=400, head_dim=head_dim, kv_len=400)
    out, q, k, v = (Address.BufferOffset(h) for h in (1, 2, 3, 4))
    kernel = kernel_for("FlashAttention")
    for block_size, tile in ((8, 8), (32, 32), (1000, MAX_TILE)):
        spec = kernel.spec(FlashAttention(out, q, k, v, block_size=block_size, **fields), (0, 1, 2, 3))
        source = spec.source(ShaderFeatures())
        assert f"@workgroup_size({tile})" in source
        assert _workgroup_bytes(source) == 12 * tile + 8 * head_dim + 4 + 4     # the tile sum, the guard's word
