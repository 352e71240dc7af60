"""Small helpers shared by the reference executor tests: programs, pointers, runs, trap capture."""

from __future__ import annotations

import numpy as np

from atlas_web import AtlasTrap, ExecutionParams, LaunchConfig, Program
from atlas_web.isa import ADD, CVT, MOV_IMM, MUL, Register, Type
from atlas_web.isa.addresses import make_pointer
from atlas_web.reference import CpuBackend

__all__ = ["r", "prog", "pointer", "lane_pointer", "run", "trap_of", "typed_bytes", "decode", "load_arrays"]

GID = Register(255)


def r(index: int) -> Register:
    return Register(index)


def prog(*instructions, **labels: int) -> Program:
    """A Program of ``instructions`` with ``labels`` (name -> index)."""
    return Program(instructions, labels)


def pointer(handle: int, offset: int = 0) -> int:
    return make_pointer(int(handle), offset)


def lane_pointer(dst: Register, base: Register, stride: int, scratch: Register) -> list:
    """Instructions setting u64 ``dst`` = ``base`` (a u64 pointer) + GLOBAL_LANE_ID * ``stride``."""
    return [
        CVT(dst=scratch, src=GID, src_ty=Type.U32, dst_ty=Type.U64),
        MOV_IMM(dst=dst, value=stride, ty=Type.U64),
        MUL(dst=scratch, lhs=scratch, rhs=dst, ty=Type.U64),
        ADD(dst=dst, lhs=base, rhs=scratch, ty=Type.U64),
    ]


def run(backend: CpuBackend, program: Program, config: LaunchConfig | int, *, registers=None, budget=None) -> None:
    """Run ``program``; ``config`` may be a lane count (LaunchConfig.linear)."""
    if isinstance(config, int):
        config = LaunchConfig.linear(config)
    backend.execute_program_with_params(program, ExecutionParams(config, registers or {}, budget))


def trap_of(backend: CpuBackend, program: Program, config, **kwargs) -> tuple:
    """``(code, instruction index, lane)`` of the trap the run raises (fails the test when none)."""
    try:
        run(backend, program, config, **kwargs)
    except AtlasTrap as trap:
        return trap.code, trap.instruction_index, trap.lane
    raise AssertionError("the launch did not trap")


def typed_bytes(ty: Type, values) -> bytes:
    """Little-endian bytes of ``values`` (Python numbers) in ``ty`` (via the reference's numeric.store)."""
    from atlas_web.reference import numeric
    array = np.empty(len(values), dtype=numeric.storage_dtype(ty))
    array[:] = values if not ty.is_float() else numeric.round_to(ty, np.asarray(values, dtype=np.float64))
    return numeric.store(ty, array).tobytes()


def decode(ty: Type, data: bytes) -> list:
    """Python numbers of ``ty`` from little-endian ``data``."""
    from atlas_web.reference import numeric
    size = ty.size_bytes()
    raw = np.frombuffer(bytes(data), dtype=np.uint8)[: len(data) - len(data) % size].reshape(-1, size)
    return [v.item() if hasattr(v, "item") else v for v in numeric.load(ty, raw)]


def load_arrays(backend, ty: Type, arrays: dict) -> dict:
    """name -> the handle of a new buffer holding ``arrays[name]`` (Python numbers) in ``ty`` (at least 1 byte)."""
    handles = {}
    for name, values in arrays.items():
        h = int(backend.allocate_buffer(max(1, len(values) * ty.size_bytes())))
        backend.copy_to_buffer(h, typed_bytes(ty, list(values)))
        handles[name] = h
    return handles
