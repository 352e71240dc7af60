"""The reference's kernel instructions (rows of category "kernel"): LayerScale against NumPy, in place,
and its array checks (all before any write, in operand order, lane -1)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import TrapCode
from atlas_web.isa import MOV_IMM, Address, LayerScale, Register, Type
from atlas_web.reference import CpuBackend

from .executor_helpers import decode, prog, run, trap_of, typed_bytes

COVERS = [("LayerScale", ty) for ty in (Type.F16, Type.BF16, Type.F32, Type.F64)]

N, ROWS = 7, 3
_NUMPY = {Type.F16: np.float16, Type.F32: np.float32, Type.F64: np.float64}


def _bf16(values: np.ndarray) -> list:
    """f32 ``values`` rounded to bf16 (nearest even), as Python floats."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return list((((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
                .astype(np.float64))


def _expected(ty: Type, x: list, s: list, rows: int) -> list:
    wide = np.float64 if ty is Type.F64 else np.float32
    product = (np.array(x, dtype=wide).reshape(rows, -1) * np.array(s, dtype=wide)).reshape(-1)
    return _bf16(product) if ty is Type.BF16 else list(product.astype(_NUMPY[ty]).astype(np.float64))


def _buffers(backend, ty: Type, rows: int):
    rng = np.random.default_rng(3)
    x = decode(ty, typed_bytes(ty, list(rng.uniform(-8, 8, rows * N))))
    s = decode(ty, typed_bytes(ty, list(rng.uniform(-2, 2, N))))
    handles = []
    for values in (x, s, [0.0] * (rows * N)):
        h = backend.allocate_buffer(max(1, len(values) * ty.size_bytes()))
        backend.copy_to_buffer(h, typed_bytes(ty, values))
        handles.append(int(h))
    return x, s, handles


@pytest.mark.parametrize("ty", [Type.F16, Type.BF16, Type.F32, Type.F64], ids=lambda t: t.name)
@pytest.mark.parametrize("rows", [1, ROWS])
def test_layer_scale_matches_numpy(ty, rows):
    backend = CpuBackend()
    x, s, (hx, hs, ho) = _buffers(backend, ty, rows)
    run(backend, prog(LayerScale(output=Address.BufferOffset(ho), input=Address.BufferOffset(hx),
                                 scale=Address.BufferOffset(hs), n=N, rows=rows, ty=ty)), 1)
    assert decode(ty, backend.copy_from_buffer(ho)) == _expected(ty, x, s, rows)


def test_layer_scale_in_place():
    backend, ty = CpuBackend(), Type.F32
    x, s, (hx, hs, _) = _buffers(backend, ty, ROWS)
    run(backend, prog(LayerScale(output=Address.BufferOffset(hx), input=Address.BufferOffset(hx),
                                 scale=Address.BufferOffset(hs), n=N, rows=ROWS, ty=ty)), 4)
    assert decode(ty, backend.copy_from_buffer(hx)) == _expected(ty, x, s, ROWS)


def test_layer_scale_checks_every_array_before_writing():
    backend, ty = CpuBackend(), Type.F32
    _, _, (hx, hs, ho) = _buffers(backend, ty, ROWS)
    short = int(backend.allocate_buffer((N - 1) * 4))   # scale one element short: checked last
    program = prog(LayerScale(output=Address.BufferOffset(ho), input=Address.BufferOffset(hx),
                              scale=Address.RegisterIndirect(Register(1), 0),
                              n=N, rows=ROWS, ty=ty))
    program = prog(MOV_IMM(dst=Register(1), value=short << 32, ty=Type.U64), *program.instructions)
    assert trap_of(backend, program, 2) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert decode(ty, backend.copy_from_buffer(ho)) == [0.0] * (ROWS * N)
