"""8- and 16-bit stores of many lanes into shared 32-bit words, on WebGpuBackend (webgpu_backend.wgsl.subword).

WGSL writes a byte or a half-word into its word in one atomic step. Checked with 4096 lanes in 64 workgroups:
lanes of four different workgroups storing the four bytes of each word (against the reference, bit for bit);
every lane storing the same byte and half-word and reading them back (the reference's values: a lane reads what
it stored, as every store stores the same); and eight lanes storing different values into one byte or half-word,
in global and in shared memory, which is a data race whose result the contract bounds (docs/semantics.md: each
byte one that some store, or the memory before, could have left), checked here in NumPy. The two-step store
this replaced (atomicAnd, then atomicOr) left the OR of the racing values there (0xff, every run on lavapipe).
"""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig
from atlas_web.isa import (
    ADD, AND, CVT, LDG, LDS, MOV_IMM, MUL, SHL, SHR, STG, STS, Address, BarSync, Type,
)
from tests.lowering.programs import GID, R, program

from .harness import assert_matches_reference, fresh_backend, run_on

U32 = Type.U32
LANES = 4096
CONFIG = LaunchConfig(grid=(LANES // 64, 1, 1), block=(64, 1, 1))
#: the bytes of the buffers before the launch (no racing store writes this)
BEFORE = 0xA5


def _imm(reg: int, value: int) -> MOV_IMM:
    return MOV_IMM(dst=R(reg), value=value, ty=U32)


def _store(handle: int, offset: int, src: int, ty: Type) -> list:
    """STG.ty [buffer handle + r<offset>], r<src> (registers 60 and 61 are scratch)."""
    return [_imm(60, handle), STG(dst=Address.RegisterIndirectComputed(R(60), R(offset)), src=R(src), ty=ty)]


def _narrow(dst: int, src: int, ty: Type) -> CVT:
    return CVT(dst=R(dst), src=R(src), src_ty=U32, dst_ty=ty)


@pytest.mark.parametrize("ty", [Type.U8, Type.I8, Type.U16, Type.F16])
def test_lanes_of_different_workgroups_store_the_parts_of_one_word(gpu_driver, ty):
    """Lane g stores its value g into part g // (LANES/parts) of word g % (LANES/parts): the parts of a word
    come from workgroups LANES/parts lanes apart."""
    size, quarter = ty.size_bytes(), LANES // (4 // ty.size_bytes())
    body = [_narrow(2, GID, ty), _imm(3, quarter - 1), AND(dst=R(4), lhs=R(GID), rhs=R(3), ty=U32),
            _imm(5, 2), SHL(dst=R(4), src=R(4), amount=R(5), ty=U32),                 # 4 * (g % quarter)
            _imm(6, quarter.bit_length() - 1), SHR(dst=R(7), src=R(GID), amount=R(6), ty=U32),
            _imm(8, size), MUL(dst=R(7), lhs=R(7), rhs=R(8), ty=U32),              # size * (g // quarter)
            ADD(dst=R(9), lhs=R(4), rhs=R(7), ty=U32), *_store(2, 9, 2, ty)]
    for _ in range(2):
        assert_matches_reference(gpu_driver, program(body), CONFIG, [bytes([BEFORE]) * (LANES * size)], types=[ty])


def test_every_lane_reads_back_the_byte_and_half_word_all_lanes_store(gpu_driver):
    """Every lane stores 7 into byte 1 and 0x1234 into half-word 1 of buffer 2, reads both back and stores them
    into its own word of buffer 3: each reads what it stored (in the two-step store another lane's atomicAnd
    could clear the bits between this lane's store and its load: a whole-suite run read 0 for 7)."""
    body = [_imm(1, 7), _narrow(2, 1, Type.U8), _imm(3, 0x1234), _narrow(4, 3, Type.U16),
            _imm(5, 1), _imm(6, 2), *_store(2, 5, 2, Type.U8), *_store(2, 6, 4, Type.U16),
            _imm(60, 2), LDG(dst=R(7), src=Address.RegisterIndirectComputed(R(60), R(5)), ty=Type.U8),
            LDG(dst=R(8), src=Address.RegisterIndirectComputed(R(60), R(6)), ty=Type.U16),
            _imm(9, 2), SHL(dst=R(10), src=R(GID), amount=R(9), ty=U32), *_store(3, 10, 7, Type.U8),
            _imm(11, 2), ADD(dst=R(12), lhs=R(10), rhs=R(11), ty=U32), *_store(3, 12, 8, Type.U16)]
    for _ in range(3):
        assert_matches_reference(gpu_driver, program(body), CONFIG, [bytes([BEFORE]) * 4, bytes(4 * LANES)])


def _run(driver, body: list, config: LaunchConfig, data: bytes) -> bytes:
    """Buffer 2 (``data`` before) after running ``body`` on a fresh WebGpuBackend, which must not trap."""
    backend = fresh_backend(driver)
    try:
        got = run_on(backend, program(body), config, [data])
    finally:
        backend.close()
    assert got.trap is None
    return got.buffers[0]


def _racing_value(dst: int, ty: Type) -> list:
    """r<dst>:ty = 1 << (lane % 8), for U16 into both bytes (registers 1 to 4 are scratch)."""
    return [_imm(1, 7), AND(dst=R(2), lhs=R(GID), rhs=R(1), ty=U32), _imm(3, 0x0101 if ty.size_bytes() == 2 else 1),
            SHL(dst=R(4), src=R(3), amount=R(2), ty=U32), _narrow(dst, 4, ty)]


def _racing_values(ty: Type) -> np.ndarray:
    """The values the 8 lanes of a group store into their one element: one bit each (their OR is none of them)."""
    bits = np.left_shift(1, np.arange(8))
    return bits if ty.size_bytes() == 1 else bits * 0x0101


@pytest.mark.parametrize("ty", [Type.U8, Type.U16])
def test_racing_stores_into_one_element_leave_one_of_their_values(gpu_driver, ty):
    """Lanes 8e … 8e+7 store 1 << (lane % 8) (for U16 into both bytes) into element e of buffer 2: each element
    after the launch is one of its 8 values (or, as the contract allows, what it held before)."""
    size = ty.size_bytes()
    body = [*_racing_value(5, ty), _imm(6, 3), SHR(dst=R(7), src=R(GID), amount=R(6), ty=U32), _imm(8, size),
            MUL(dst=R(7), lhs=R(7), rhs=R(8), ty=U32), *_store(2, 7, 5, ty)]
    dtype = np.dtype(f"<u{size}")
    allowed = np.append(_racing_values(ty), np.frombuffer(bytes([BEFORE]) * size, dtype))
    for _ in range(2):
        elements = np.frombuffer(_run(gpu_driver, body, CONFIG, bytes([BEFORE]) * (LANES // 8 * size)), dtype)
        wrong = elements[~np.isin(elements, allowed)]
        assert wrong.size == 0, f"{wrong.size} of {elements.size} elements hold no stored value: {wrong[:4]}"


@pytest.mark.parametrize("ty", [Type.U8, Type.U16])
def test_racing_shared_memory_stores_leave_one_of_their_values(gpu_driver, ty):
    """In each workgroup, lanes storing 1 << (lane % 8) into one shared element, then (after BarSync) every lane
    stores what it reads there into its own element of buffer 2: one of the 8 values, the same in the whole
    workgroup (shared memory starts zeroed, a value the contract also allows)."""
    size = ty.size_bytes()
    config = LaunchConfig(grid=(16, 1, 1), block=(64, 1, 1), shared_memory=4)
    body = [*_racing_value(5, ty), STS(dst=Address.Shared(offset=0), src=R(5), ty=ty), BarSync(id=0),
            LDS(dst=R(6), src=Address.Shared(offset=0), ty=ty),
            _imm(7, size), MUL(dst=R(8), lhs=R(GID), rhs=R(7), ty=U32), *_store(2, 8, 6, ty)]
    dtype = np.dtype(f"<u{size}")
    blocks = np.frombuffer(_run(gpu_driver, body, config, bytes(config.total_threads * size)), dtype).reshape(16, 64)
    assert (blocks == blocks[:, :1]).all(), "lanes of one workgroup read different values"
    wrong = blocks[:, 0][~np.isin(blocks[:, 0], np.append(_racing_values(ty), 0))]
    assert wrong.size == 0, f"{wrong.size} of 16 workgroups hold no stored value: {wrong[:4]}"
