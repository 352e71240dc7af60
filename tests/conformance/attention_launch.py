"""One Attention/FlashAttention launch on any backend with random f32 inputs, checked within the contract's bound
against NumPy (``attention_cases.compare``), and with the bytes after its output left as they were: what the
wasm and webgpu kernel tests share (tests/wasm_backend/test_attention_launch.py,
tests/webgpu_backend/test_attention.py)."""

from __future__ import annotations

import numpy as np

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, OPCODE_TABLE, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES

from .attention_cases import AttentionCase, compare
from .matrix_cases import decode_array, encode_array

__all__ = ["attend", "random_inputs", "check_attention", "GUARD", "DEFAULTS"]

INFO = {info.name: info for info in OPCODE_TABLE if info.name in ("Attention", "FlashAttention")}
GUARD = 64   # bytes after the output that must keep their value
DEFAULTS = dict(kv_len=0, causal=False, kv_heads=0, max_seq=0)


def attend(backend, name: str, arrays: dict, fields: dict, ty: Type = Type.F32) -> bytes:
    """The output's bytes after one launch of ``name`` with one buffer per array (float64 values of ``ty``; the
    output's buffer GUARD bytes longer). Fails when the launch wrote past its output."""
    handles = {}
    for key, values in arrays.items():
        data = encode_array(ty, values) + (b"\x5a" * GUARD if key == "output" else b"")
        handles[key] = int(backend.allocate_buffer(len(data)))
        backend.copy_to_buffer(handles[key], data)
    builder = ProgramBuilder()
    builder.add(INSTRUCTION_CLASSES[name](**{k: Address.BufferOffset(h) for k, h in handles.items()}, **fields,
                                         ty=ty))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    raw = bytes(backend.copy_from_buffer(handles["output"]))
    for handle in handles.values():
        backend.free_buffer(handle)
    assert raw[len(raw) - GUARD:] == b"\x5a" * GUARD, "the kernel wrote past its output"
    return raw[:len(raw) - GUARD]


def random_inputs(fields: dict, seed: int = 5, ty: Type = Type.F32) -> dict:
    """Uniform query, key, value of ``ty`` in [-2, 2) for the shape ``fields`` (defaults resolved); output 7s."""
    rng = np.random.default_rng(seed)
    batch, heads, seq, dim = fields["batch"], fields["heads"], fields["seq_len"], fields["head_dim"]
    kv = fields.get("kv_len") or seq
    kv_heads = fields.get("kv_heads") or heads
    slots = fields.get("max_seq") or kv
    values = lambda n: decode_array(ty, encode_array(ty, rng.uniform(-2, 2, n)))  # noqa: E731
    return dict(output=np.full(batch * heads * seq * dim, 7.0), query=values(batch * heads * seq * dim),
                key=values(batch * kv_heads * slots * dim), value=values(batch * kv_heads * slots * dim))


def check_attention(backend, name: str, fields: dict, arrays: dict | None = None, ty: Type = Type.F32) -> None:
    """Launch ``name`` with ``fields`` (the row's defaults for the rest) on ``ty`` and compare with NumPy."""
    full = {**DEFAULTS, **fields}
    arrays = arrays or random_inputs(full, ty=ty)
    raw = attend(backend, name, arrays, full, ty)
    bad = compare(AttentionCase(name, INFO[name], ty, full), arrays, raw)
    assert not bad, f"{name} {fields}: {len(bad)} outside the bound, first {bad[:3]}"
