"""The reference's attention kernels (rows of category "attention"): RoPE (both pairings, a position offset),
KVCacheUpdate (a copy bit for bit; a position past the cache traps before any write), Attention and
FlashAttention (grouped-query, causal, a kv cache longer than kv_len) against NumPy written the usual way
(float64, rounded once), the array checks (before any write, lane -1) and the rows' requirements."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import ProgramError, TrapCode
from atlas_web.isa import MOV_IMM, Address, Register, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.isa.opcodes import FLOATS, SCALARS
from atlas_web.reference import CpuBackend
from atlas_web.verify import verify

from .executor_helpers import decode, load_arrays, prog, run, trap_of, typed_bytes

FLOAT_TYPES = [Type.F16, Type.BF16, Type.F32, Type.F64]
COVERS = [(name, ty) for name in ("RoPE", "Attention", "FlashAttention") for ty in FLOATS] + \
    [("KVCacheUpdate", ty) for ty in SCALARS]
RoPE, KVCacheUpdate, Attention, FlashAttention = (INSTRUCTION_CLASSES[n] for n in (
    "RoPE", "KVCacheUpdate", "Attention", "FlashAttention"))


def _rounded(ty: Type, values: np.ndarray) -> np.ndarray:
    return np.array(decode(ty, typed_bytes(ty, list(np.ravel(values)))), dtype=np.float64)


def _run(cls, ty: Type, arrays: dict, written: str, **fields) -> list:
    backend = CpuBackend()
    handles = load_arrays(backend, ty, arrays)
    run(backend, prog(cls(**{k: Address.BufferOffset(h) for k, h in handles.items()}, **fields, ty=ty)), 1)
    return decode(ty, backend.copy_from_buffer(handles[written]))


# ---- RoPE ----------------------------------------------------------------------------------------------------

def _numpy_rope(x: np.ndarray, freqs: np.ndarray, position: int, interleaved: bool) -> np.ndarray:
    """(batch, seq, heads, dim) rotated the usual ways: as complex numbers (interleaved) or rotate_half."""
    seq = x.shape[1]
    theta = np.outer(position + np.arange(seq), freqs)[None, :, None, :]
    if interleaved:
        z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * theta)
        return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
    cos, sin = np.cos(np.concatenate([theta] * 2, -1)), np.sin(np.concatenate([theta] * 2, -1))
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("ty", FLOAT_TYPES, ids=lambda t: t.name)
def test_rope_matches_numpy_rounded_once(ty, interleaved):
    batch, seq, heads, dim, position = 2, 5, 3, 8, 7
    rng = np.random.default_rng(3)
    x = _rounded(ty, rng.uniform(-3, 3, batch * seq * heads * dim))
    freqs = _rounded(ty, 10000.0 ** (-np.arange(0, dim, 2) / dim))
    got = _run(RoPE, ty, dict(output=[0.0] * x.size, input=x, freqs=freqs), "output", batch=batch, seq_len=seq,
               heads=heads, head_dim=dim, position=position, interleaved=interleaved)
    want = _numpy_rope(x.reshape(batch, seq, heads, dim), freqs, position, interleaved)
    if ty is Type.F64:
        assert np.allclose(got, want.ravel(), rtol=1e-14, atol=1e-14)
    else:   # the complex product rounds differently in float64's last bits: equal after rounding to ty, or 1 ulp
        assert np.allclose(got, _rounded(ty, want), rtol=2.0 ** -(8 if ty is Type.BF16 else 11 if ty is Type.F16
                                                                    else 23), atol=0)


def test_rope_in_place_and_the_pairings_differ():
    x = np.arange(8.0)
    freqs = [0.5, 0.25, 0.125, 0.0625]
    backend = CpuBackend()
    handles = load_arrays(backend, Type.F64, dict(input=x, freqs=freqs))
    a = {k: Address.BufferOffset(h) for k, h in handles.items()}
    run(backend, prog(RoPE(output=a["input"], **a, batch=1, seq_len=1, heads=1, head_dim=8, position=3,
                           ty=Type.F64)), 1)
    half = decode(Type.F64, backend.copy_from_buffer(handles["input"]))
    want = _numpy_rope(x.reshape(1, 1, 1, 8), np.array(freqs), 3, False).ravel()
    assert np.allclose(half, want, rtol=1e-15)
    inter = _run(RoPE, Type.F64, dict(output=[0.0] * 8, input=x, freqs=freqs), "output", batch=1, seq_len=1,
                 heads=1, head_dim=8, position=3, interleaved=True)
    assert not np.allclose(half, inter)


def test_rope_needs_an_even_head_dim():
    a = Address.BufferOffset(2)
    with pytest.raises(ProgramError, match="head_dim"):
        verify(prog(RoPE(output=a, input=a, freqs=a, batch=1, seq_len=1, heads=1, head_dim=7)))


# ---- KVCacheUpdate -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ty", sorted(SCALARS, key=lambda t: t.code), ids=lambda t: t.name)
def test_kv_cache_update_writes_one_position_bit_for_bit(ty):
    batch, heads, dim, max_seq, position = 2, 3, 5, 6, 4
    cache = [1] * (batch * heads * max_seq * dim)
    new = [(i % 7) + 2 for i in range(batch * heads * dim)]
    got = np.array(_run(KVCacheUpdate, ty, dict(cache=cache, new_kv=new), "cache", position=position, batch=batch,
                        heads=heads, head_dim=dim, max_seq=max_seq)).reshape(batch, heads, max_seq, dim)
    want = np.ones((batch, heads, max_seq, dim))
    want[:, :, position] = np.array(new).reshape(batch, heads, dim)
    assert np.array_equal(got, want)


def test_kv_cache_update_copies_nan_payloads_and_defaults_to_position_plus_one():
    backend = CpuBackend()
    cache = int(backend.allocate_buffer(3 * 2 * 4))
    new = int(backend.allocate_buffer(2 * 4))
    backend.copy_to_buffer(new, np.array([0x7FC01234, 0xFF800001], dtype=np.uint32).tobytes())
    run(backend, prog(KVCacheUpdate(cache=Address.BufferOffset(cache), new_kv=Address.BufferOffset(new), position=2,
                                    batch=1, heads=1, head_dim=2)), 1)
    words = np.frombuffer(bytes(backend.copy_from_buffer(cache)), dtype=np.uint32)
    assert list(words) == [0, 0, 0, 0, 0x7FC01234, 0xFF800001]


def test_a_position_past_the_cache_traps_before_anything_is_written():
    backend = CpuBackend()
    handles = load_arrays(backend, Type.F32, dict(cache=[3.0] * 8, new_kv=[1.0, 2.0]))
    a = {k: Address.BufferOffset(h) for k, h in handles.items()}
    for position in (4, 9):
        instr = KVCacheUpdate(**a, position=position, batch=1, heads=1, head_dim=2, max_seq=4)
        assert trap_of(backend, prog(instr), 1) == (TrapCode.OUT_OF_BOUNDS, 0, -1)
        assert decode(Type.F32, backend.copy_from_buffer(handles["cache"])) == [3.0] * 8
    try:
        run(backend, prog(KVCacheUpdate(**a, position=4, batch=1, heads=1, head_dim=2, max_seq=4)), 1)
    except Exception as caught:   # noqa: BLE001 - the message is what is checked
        assert "position = 4 is not below 4" in str(caught)
    run(backend, prog(KVCacheUpdate(**a, position=3, batch=1, heads=1, head_dim=2, max_seq=4)), 1)
    assert decode(Type.F32, backend.copy_from_buffer(handles["cache"])) == [3.0] * 6 + [1.0, 2.0]


# ---- Attention, FlashAttention -------------------------------------------------------------------------------

def _numpy_attention(q, k, v, causal: bool):
    """softmax(q k^T / sqrt(d)) v written the usual way (float64), k and v repeated over query head groups."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        seq, kv = s.shape[-2:]
        s = np.where(np.triu(np.ones((seq, kv), bool), kv - seq + 1), -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def _attention_case(cls, ty, *, batch=2, heads=4, seq=3, dim=5, kv_len=0, kv_heads=0, max_seq=0, causal=False,
                    **extra):
    rng = np.random.default_rng(17)
    kv, kh = kv_len or seq, kv_heads or heads
    ms = max_seq or kv
    q = _rounded(ty, rng.uniform(-2, 2, batch * heads * seq * dim))
    k = _rounded(ty, rng.uniform(-2, 2, batch * kh * ms * dim))
    v = _rounded(ty, rng.uniform(-2, 2, batch * kh * ms * dim))
    got = _run(cls, ty, dict(output=[0.0] * q.size, query=q, key=k, value=v), "output", batch=batch, heads=heads,
               seq_len=seq, head_dim=dim, kv_len=kv_len, kv_heads=kv_heads, max_seq=max_seq, causal=causal, **extra)
    cut = lambda a: a.reshape(batch, kh, ms, dim)[:, :, :kv]  # noqa: E731
    want = _numpy_attention(q.reshape(batch, heads, seq, dim), cut(k), cut(v), causal)
    return np.array(got), want.ravel()


def _close(ty, got, want):
    if ty is Type.F64:
        return np.allclose(got, want, rtol=1e-13, atol=1e-14)
    return np.array_equal(got, _rounded(ty, want)) or np.allclose(got, _rounded(ty, want), rtol=2.0 ** -22, atol=0)


SHAPES = [dict(), dict(causal=True), dict(seq=1, kv_len=6, max_seq=9), dict(seq=3, kv_len=7, causal=True),
          dict(kv_heads=2), dict(kv_heads=1, seq=4, causal=True)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()) or "plain")
@pytest.mark.parametrize("ty", FLOAT_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("cls", [Attention, FlashAttention], ids=lambda c: c.__name__)
def test_attention_matches_numpy_rounded_once(cls, ty, shape):
    extra = {"block_size": 2} if cls is FlashAttention else {}
    got, want = _attention_case(cls, ty, **shape, **extra)
    assert _close(ty, got, want), np.max(np.abs(got - want))


def test_attention_nan_key_makes_every_row_that_sees_it_nan():
    seq, dim = 4, 2
    k = np.ones(seq * dim)
    k[2 * dim] = math.nan                     # key 2
    got = np.array(_run(Attention, Type.F32, dict(output=[0.0] * seq * dim, query=np.ones(seq * dim), key=k,
                                                  value=np.ones(seq * dim)), "output", batch=1, heads=1,
                        seq_len=seq, head_dim=dim, causal=True)).reshape(seq, dim)
    assert not np.isnan(got[:2]).any() and np.isnan(got[2:]).all()


def test_attention_checks_every_array_before_writing():
    backend = CpuBackend()
    handles = load_arrays(backend, Type.F32, dict(output=[5.0] * 8, query=[1.0] * 8, key=[1.0] * 8, value=[1.0] * 7))
    a = {k: Address.BufferOffset(h) for k, h in handles.items()}
    a["value"] = Address.RegisterIndirect(Register(1), 0)   # one element short: checked last, at the launch
    program = prog(MOV_IMM(dst=Register(1), value=handles["value"] << 32, ty=Type.U64),
                   Attention(**a, batch=1, heads=1, seq_len=4, head_dim=2))
    assert trap_of(backend, program, 1) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert decode(Type.F32, backend.copy_from_buffer(handles["output"])) == [5.0] * 8


@pytest.mark.parametrize("fields, operand", [
    (dict(heads=4, kv_heads=3), "kv_heads"), (dict(seq_len=4, kv_len=6, max_seq=5), "max_seq"),
    (dict(seq_len=4, kv_len=3, causal=True), "causal")])
def test_attention_requirements(fields, operand):
    a = Address.BufferOffset(2)
    base = dict(output=a, query=a, key=a, value=a, batch=1, heads=2, seq_len=2, head_dim=4)
    with pytest.raises(ProgramError, match=operand):
        verify(prog(Attention(**{**base, **fields})))
    with pytest.raises(ProgramError, match="block_size"):
        verify(prog(FlashAttention(**base, block_size=0)))
    verify(prog(FlashAttention(**base, block_size=3, kv_len=5, causal=True, kv_heads=1, max_seq=8)))
