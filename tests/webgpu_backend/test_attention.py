"""The WGSL attention kernels on what the conformance suite's layouts do not reach: a head_dim past the workgroup
(several output elements per invocation), several 64-key tiles with a short last one, a causal row that walks
only its keys (a NaN in a value or key it does not see is never read), grouped-query heads reading a cache longer
than kv_len, the bytes after the output kept; KVCacheUpdate with cache and new values in one buffer (WebGPU
copies only between two buffers: the rows are read and written back) and its trap before any write. Each within
the contract's bound of NumPy (tests/conformance/attention_cases)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import AtlasTrap, LaunchConfig, ProgramBuilder, TrapCode
from atlas_web.isa import Address, KVCacheUpdate, Type

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
