"""TensorContract on the wasm backend: the plan of atlas_web.isa.contraction read as the kernel reads it (operands
in place, transposed, or copied; size-1 axes never force a copy), the copy loops (size-1 axes dropped,
contiguous axes merged), the scratch holding the copies, and launches whose copies take every loop form (a
contiguous run, strided elements, several levels) against the reference, NaN payloads kept. The conformance
suite (tests/conformance/test_contract.py) holds the row's cases to the bound."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, Type
from atlas_web.isa.contraction import gemm_plan, output_size
from atlas_web.isa.instructions import TensorContract
from wasm_backend.lowering.coop_contract import contract_scratch_bytes, copy_loops
from wasm_backend.lowering.coop_gemm import driver_scratch_bytes
from wasm_backend.lowering.coop_contract import contract_gemm_shape

_DTYPE = {Type.F32: np.float32, Type.F64: np.float64}


def _instr(shape_a, shape_b, pairs, ty=Type.F32, **fields):
    return TensorContract(output=Address.BufferOffset(1), a=Address.BufferOffset(2), b=Address.BufferOffset(3),
                          shape_a=shape_a, shape_b=shape_b, contract_dims=pairs, ty=ty, **fields)


@pytest.mark.parametrize("shape_a, shape_b, pairs, a, b", [
    ((3, 4), (4, 5), ((1, 0),), "in place", "in place"),
    ((4, 3), (4, 5), ((0, 0),), "transposed", "in place"),
    ((3, 4), (5, 4), ((1, 1),), "in place", "transposed"),
    ((3, 4, 5), (6, 4), ((1, 1),), "copied", "transposed"),
    ((1, 4, 1, 3), (3, 1, 2), ((3, 0),), "in place", "in place"),
    ((4, 3, 5), (5, 3, 2), ((2, 0), (1, 1)), "in place", "copied"),    # the smaller one copied
    ((4, 3, 5), (3, 5, 2), ((2, 1), (1, 0)), "in place", "in place"),   # pairs taken in a's order
])
def test_the_plan_reads_in_place_where_the_layout_allows(shape_a, shape_b, pairs, a, b):
    plan = gemm_plan(shape_a, shape_b, pairs)
    how = {(False, False): "in place", (True, False): "transposed", (False, True): "copied"}
    assert (how[plan.a.transposed, plan.a.copied], how[plan.b.transposed, plan.b.copied]) == (a, b)
    assert plan.m * plan.n == output_size(shape_a, shape_b, pairs)


def test_copy_loops_drop_unit_axes_and_merge_contiguous_ones():
    plan = gemm_plan((2, 3, 4, 5), (4, 6, 3), ((1, 2), (2, 0)))
    assert plan.a.copied and plan.a.order == (0, 3, 1, 2)
    # a (2, 3, 4, 5) read as axes 0, 3, then 1 and 2 merged (stride 20 and 5 elements: 12 rows 5 apart)
    assert copy_loops((2, 3, 4, 5), plan.a, 4) == [(2, 240), (5, 4), (12, 20)]
    plan = gemm_plan((1, 3, 1, 4), (3, 2), ((1, 0),))
    assert not plan.a.copied
    assert copy_loops((3, 1, 4), gemm_plan((3, 1, 4), (4, 2), ((2, 0),)).a, 8) == [(12, 8)]


def test_the_scratch_holds_the_copies_after_the_drivers():
    instr = _instr((3, 4, 5), (6, 4), ((1, 1),))
    driver = -(-driver_scratch_bytes(contract_gemm_shape(instr)) // 16) * 16
    assert contract_scratch_bytes(instr) == driver + 3 * 4 * 5 * 4 + 0   # b is read transposed: no copy
    assert contract_scratch_bytes(_instr((3, 4), (4, 5), ((1, 0),))) == driver_scratch_bytes(
        contract_gemm_shape(_instr((3, 4), (4, 5), ((1, 0),))))


def _run(backend, instr_fields, a, b, c):
    handles = {}
    for name, data in (("output", c), ("a", a), ("b", b)):
        handles[name] = int(backend.allocate_buffer(max(8, data.nbytes)))
        backend.copy_to_buffer(handles[name], data.tobytes())
    builder = ProgramBuilder()
    builder.add(TensorContract(**{n: Address.BufferOffset(h) for n, h in handles.items()}, **instr_fields))
    builder.add(EXIT())
    backend.execute_program(builder.build(), LaunchConfig())
    out = bytes(backend.copy_from_buffer(handles["output"]))[:c.nbytes]
    for handle in handles.values():
        backend.free_buffer(handle)
    return out


@pytest.mark.parametrize("ty", [Type.F32, Type.F64])
@pytest.mark.parametrize("shape_a, shape_b, pairs", [
    ((5, 6, 7), (9, 6), ((1, 1),)),                    # a copied: strided elements under two levels
    ((2, 3, 4, 5), (4, 6, 3), ((1, 2), (2, 0))),       # both copied, a contiguous run innermost
    ((7, 1, 9), (9, 1, 7), ((0, 2), (2, 0))),          # a full contraction through unit axes
    ((17, 33), (33, 1), ((1, 0),)),                     # a GEMV shape
])
def test_launches_match_the_reference(backends, reference, ty, shape_a, shape_b, pairs):
    rng = np.random.default_rng(3)
    dtype = _DTYPE[ty]
    a = rng.standard_normal(int(np.prod(shape_a))).astype(dtype)
    b = rng.standard_normal(int(np.prod(shape_b))).astype(dtype)
    c = rng.standard_normal(output_size(shape_a, shape_b, pairs)).astype(dtype)
    fields = dict(shape_a=shape_a, shape_b=shape_b, contract_dims=pairs, ty=ty, alpha=0.5, beta=-2.0)
    got = np.frombuffer(_run(backends[1], fields, a, b, c), dtype)
    want = np.frombuffer(_run(reference, fields, a, b, c), dtype)
    k = int(np.prod([shape_a[i] for i, _ in pairs]))
    scale = np.abs(0.5 * np.tensordot(np.abs(a.reshape(shape_a)).astype(np.float64),
                                      np.abs(b.reshape(shape_b)).astype(np.float64),
                                      ([i for i, _ in pairs], [j for _, j in pairs])).reshape(-1)) + 2 * np.abs(c)
    assert np.all(np.abs(got - want) <= (k + 3) * np.finfo(dtype).eps * scale)


def test_a_nan_payload_in_a_copied_operand_reaches_the_output(backends):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    bits = a.view(np.uint32).copy()
    bits[0, 1, 2] = 0x7FC0_1234
    b = np.ones(3, dtype=np.float32)
    fields = dict(shape_a=(2, 3, 4), shape_b=(3,), contract_dims=((1, 0),), ty=Type.F32)
    out = np.frombuffer(_run(backends[1], fields, bits.view(np.float32).reshape(-1), b, np.zeros(8, np.float32)),
                        np.float32)
    assert np.isnan(out[2]) and not np.isnan(np.delete(out, 2)).any()
