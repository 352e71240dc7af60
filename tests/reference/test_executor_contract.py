"""The reference's TensorContract: F32 and F64 against NumPy's tensordot (float64, rounded once), the issue's
example (C[i,j,k] = sum_l A[i,j,l] B[l,k]), pairs in any order, alpha and beta (beta == 0 does not read the
output), an empty sum, the array checks (before any write, in operand order, lane -1), and the text, bytecode
and JSON forms of the DIMS operands."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import ProgramError
from atlas_web.asm import format_instruction, parse_instruction
from atlas_web.bytecode import decode_program, encode_program
from atlas_web.isa import Address, EXIT, Type
from atlas_web.isa.instructions import TensorContract
from atlas_web.jsonform import program_from_json, program_to_json
from atlas_web.reference import CpuBackend

from .executor_helpers import prog, run

TYPES = [Type.F32, Type.F64]
COVERS = [("TensorContract", ty) for ty in TYPES]
_DTYPE = {Type.F32: np.float32, Type.F64: np.float64}


def _contract(backend, ty, a, b, c, shape_a, shape_b, pairs, **fields):
    handles = {}
    for name, values in (("output", c), ("a", a), ("b", b)):
        handles[name] = int(backend.allocate_buffer(max(8, values.nbytes)))
        backend.copy_to_buffer(handles[name], values.tobytes())
    instr = TensorContract(**{n: Address.BufferOffset(h) for n, h in handles.items()}, shape_a=shape_a,
                           shape_b=shape_b, contract_dims=pairs, ty=ty, **fields)
    return handles, prog(instr, EXIT())


def _out(backend, handles, c):
    return np.frombuffer(bytes(backend.copy_from_buffer(handles["output"]))[:c.nbytes], c.dtype)


@pytest.mark.parametrize("ty", TYPES)
@pytest.mark.parametrize("shape_a, shape_b, pairs", [
    ((2, 3, 5), (5, 4), ((2, 0),)),                   # the C[i,j,k] = sum_l A[i,j,l] B[l,k]
    ((4, 3, 5), (5, 3, 2), ((2, 0), (1, 1))),
    ((4, 3, 5), (5, 3, 2), ((1, 1), (2, 0))),         # the same pairs in the other order
    ((3, 4), (5,), ()),                               # outer product
    ((3, 4), (3, 4), ((0, 0), (1, 1))),               # one element
])
def test_against_tensordot(ty, shape_a, shape_b, pairs):
    backend = CpuBackend()
    rng = np.random.default_rng(1)
    dtype = _DTYPE[ty]
    a = rng.standard_normal(int(np.prod(shape_a))).astype(dtype)
    b = rng.standard_normal(int(np.prod(shape_b))).astype(dtype)
    axes = ([i for i, _ in pairs], [j for _, j in pairs])
    want64 = np.tensordot(a.reshape(shape_a).astype(np.float64), b.reshape(shape_b).astype(np.float64), axes)
    c = rng.standard_normal(want64.size).astype(dtype)
    handles, program = _contract(backend, ty, a, b, c, shape_a, shape_b, pairs, alpha=-0.5, beta=2.0)
    run(backend, program, 1)
    want = (-0.5 * want64.reshape(-1) + 2.0 * c.astype(np.float64)).astype(dtype)
    got = _out(backend, handles, c)
    if ty is Type.F32:   # rounded once from binary64: equal but for summation order in NumPy's float64
        assert np.array_equal(got, want) or np.max(np.abs(got - want) / np.abs(want)) < 2e-7
    else:
        assert np.allclose(got, want, rtol=1e-14, atol=0)


def test_beta_zero_does_not_read_the_output_and_an_empty_sum_gives_beta_times_it():
    backend = CpuBackend()
    c = np.full(12, np.nan, np.float32)
    a, b = np.ones(0, np.float32), np.ones(0, np.float32)
    handles, program = _contract(backend, Type.F32, a, b, c, (3, 0), (0, 4), ((1, 0),), alpha=np.inf)
    run(backend, program, 1)
    assert np.array_equal(_out(backend, handles, c), np.zeros(12, np.float32))
    c = np.arange(12, dtype=np.float32)
    handles, program = _contract(backend, Type.F32, a, b, c, (3, 0), (0, 4), ((1, 0),), alpha=np.inf, beta=0.5)
    run(backend, program, 1)
    assert np.array_equal(_out(backend, handles, c), c * 0.5)


@pytest.mark.parametrize("short", ["output", "a", "b"])
def test_a_short_array_is_refused_at_launch_before_anything_is_written(short):
    """Buffer addresses: the launch's static bounds (the row's extents) refuse it, naming the operand; held in
    registers, the step traps (tests/conformance/test_contract.py)."""
    backend = CpuBackend()
    arrays = {"output": np.zeros(12, np.float32), "a": np.ones(6, np.float32), "b": np.ones(8, np.float32)}
    handles = {}
    for name, values in arrays.items():
        data = values.tobytes()[:-4] if name == short else values.tobytes()
        handles[name] = int(backend.allocate_buffer(len(data)))
        backend.copy_to_buffer(handles[name], data)
    program = prog(TensorContract(**{n: Address.BufferOffset(h) for n, h in handles.items()}, shape_a=(3, 2),
                                  shape_b=(2, 4), contract_dims=((1, 0),)), EXIT())
    with pytest.raises(ProgramError, match=f"operand '{short}'"):
        run(backend, program, 1)
    if short != "output":
        assert bytes(backend.copy_from_buffer(handles["output"])) == arrays["output"].tobytes()


def test_dims_operands_round_trip_through_text_bytecode_and_json():
    instr = TensorContract(output=Address.BufferOffset(1), a=Address.BufferOffset(2), b=Address.BufferOffset(3),
                           shape_a=[2, 3, 5], shape_b=(5, 4), contract_dims=[[2, 0]], alpha=0.5)
    assert instr.shape_a == (2, 3, 5) and instr.contract_dims == ((2, 0),)
    text = format_instruction(instr)
    assert "(2 3 5), (5 4), (2:0)" in text
    assert parse_instruction(text) == instr
    program = prog(instr, EXIT())
    assert decode_program(encode_program(program)).instructions == program.instructions
    assert program_from_json(program_to_json(program)).instructions == program.instructions
    outer = TensorContract(output=Address.BufferOffset(1), a=Address.BufferOffset(2), b=Address.BufferOffset(3),
                           shape_a=(3,), shape_b=(4,), contract_dims=())
    assert parse_instruction(format_instruction(outer)) == outer
