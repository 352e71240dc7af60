"""Programs and device mixes for the multi-device tests."""

from __future__ import annotations

import numpy as np

from atlas_web import LaunchConfig, Program
from atlas_web.distributed import MultiDeviceExecutor, Sharded, Stage
from atlas_web.isa import ADD, CVT, DIV, LDG, MOV_IMM, MUL, STG, Address, Register, Type
from atlas_web.registry import discover_backends, get_backend

__all__ = ["X", "Y", "N", "square_program", "divide_program", "two_stages", "two_stages_expected", "mixes", "start", "executor"]

X, Y = Register(0), Register(1)
GID = Register(255)
#: the elements of the two-stage tests' arrays
N = 16


def _element(dst: Register, base: Register, ty: Type) -> list:
    """dst (u64) = base + GLOBAL_LANE_ID * size of ty (r20, r21 scratch)."""
    return [CVT(dst=Register(20), src=GID, src_ty=Type.U32, dst_ty=Type.U64),
            MOV_IMM(dst=Register(21), value=ty.size_bytes(), ty=Type.U64),
            MUL(dst=Register(20), lhs=Register(20), rhs=Register(21), ty=Type.U64),
            ADD(dst=dst, lhs=base, rhs=Register(20), ty=Type.U64)]


def square_program(ty: Type, *after) -> Program:
    """y[lane] = x[lane] * x[lane] (X, Y: pointer registers), then the instructions ``after``."""
    return Program([*_element(Register(10), X, ty), *_element(Register(11), Y, ty),
                    LDG(dst=Register(12), src=Address.RegisterIndirect(Register(10)), ty=ty),
                    MUL(dst=Register(12), lhs=Register(12), rhs=Register(12), ty=ty),
                    STG(dst=Address.RegisterIndirect(Register(11)), src=Register(12), ty=ty), *after], {})


def divide_program() -> Program:
    """y[lane] = 1000 / x[lane] (i32): traps DIVISION_BY_ZERO where x is 0."""
    ty = Type.I32
    return Program([*_element(Register(10), X, ty), *_element(Register(11), Y, ty),
                    LDG(dst=Register(12), src=Address.RegisterIndirect(Register(10)), ty=ty),
                    MOV_IMM(dst=Register(13), value=1000, ty=ty),
                    DIV(dst=Register(12), lhs=Register(13), rhs=Register(12), ty=ty),
                    STG(dst=Address.RegisterIndirect(Register(11)), src=Register(12), ty=ty)], {})


def _available() -> set[str]:
    return {s.name for s in discover_backends() if s.available}


def two_stages(ex, x, lanes: int, layout=Sharded()):
    """The stages square then divide (``N`` i32 elements, ``lanes`` per launch) on devices 0 and 1 (or 0 alone)
    of executor ``ex`` over ``x``, and the output array: ``(stages, out)``."""
    xs, sq, out = (ex.array(x, Type.I32, layout), ex.empty(N, Type.I32, layout), ex.empty(N, Type.I32, layout))
    config = LaunchConfig(grid=(1, 1, 1), block=(lanes, 1, 1))
    k = len(ex.devices)
    return (Stage(square_program(Type.I32), config, 0, {X: xs, Y: sq}),
            Stage(divide_program(), config, 1 % k, {X: sq, Y: out})), out


def two_stages_expected(x) -> bytes:
    """The bytes ``two_stages``' output holds after both stages: 1000 // (x * x) as i32."""
    return (1000 // (x * x)).astype(np.int32).tobytes()


def mixes() -> list[tuple[str, ...]]:
    """Device mixes to run: one cpu, two cpu, two wasm, wasm + cpu, and wasm + webgpu + cpu where webgpu starts."""
    out = [("cpu",), ("cpu", "cpu"), ("wasm", "wasm"), ("wasm", "cpu")]
    if "webgpu" in _available():
        out.append(("wasm", "webgpu", "cpu"))
    return out


def start(names, close=None) -> list:
    """A fresh backend per name, each handed to ``close`` (the tests' fixture: closed when the test ends)."""
    backends = [get_backend(name) for name in names]
    return [close(backend) for backend in backends] if close is not None else backends


def executor(close, names, **options) -> MultiDeviceExecutor:
    """A MultiDeviceExecutor over fresh backends named ``names``; ``close`` (the tests' fixture) closes the
    executor and then the backends when the test ends."""
    return close(MultiDeviceExecutor(start(names, close), **options))
