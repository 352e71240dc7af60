"""TensorContract's WGSL kernel (F32) on what the conformance suite's cases do not reach: operands gathered along
several axes past one 64 x 64 tile and one 16-deep slice (both operands gathered, a unit axis among them), and
A and B in C's buffer (read through C's binding); against the reference within the contract's bound; the
gather's axes (unit axes left out)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, Type
from atlas_web.isa.contraction import output_size
from atlas_web.isa.instructions import TensorContract
from atlas_web.reference import CpuBackend
from webgpu_backend.wgsl.kernels.contract import contract_spec


def _run(backend, fields: dict, a, b, c, one_buffer: bool) -> np.ndarray:
    parts = {"output": c, "a": a, "b": b}
    handles, offsets = {}, {}
    if one_buffer:
        data, at = b"", 0
        for name, values in parts.items():
            offsets[name] = len(data)
            data += values.tobytes() + b"\0" * (-values.nbytes % 16)
        shared = int(backend.allocate_buffer(len(data)))
        backend.copy_to_buffer(shared, data)
        handles = dict.fromkeys(parts, shared)
    else:
        for name, values in parts.items():
            handles[name], offsets[name] = int(backend.allocate_buffer(max(16, values.nbytes))), 0
            backend.copy_to_buffer(handles[name], values.tobytes())
    instr = TensorContract(**{n: Address.BufferOffset(handles[n], offsets[n]) for n in parts}, ty=Type.F32,
                           **fields)
    backend.execute_program(ProgramBuilder().add(instr).add(EXIT()).build(), LaunchConfig())
    raw = bytes(backend.copy_from_buffer(handles["output"]))[offsets["output"]:offsets["output"] + c.nbytes]
    for handle in set(handles.values()):
        backend.free_buffer(handle)
    return np.frombuffer(raw, np.float32)


@pytest.mark.parametrize("one_buffer", [False, True])
@pytest.mark.parametrize("shape_a, shape_b, pairs", [
    ((9, 5, 1, 17), (17, 3, 7, 5), ((3, 0), (1, 3))),        # a in place across its unit axis, b gathered
    ((70, 6, 5), (5, 66, 6), ((1, 2), (2, 0))),             # a gathered past one tile
    ((4, 70, 3), (3, 5, 4, 2), ((0, 2), (2, 0))),            # both gathered
])
def test_gathered_operands_match_the_reference(webgpu, shape_a, shape_b, pairs, one_buffer):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(int(np.prod(shape_a))).astype(np.float32)
    b = rng.standard_normal(int(np.prod(shape_b))).astype(np.float32)
    c = rng.standard_normal(output_size(shape_a, shape_b, pairs)).astype(np.float32)
    fields = dict(shape_a=shape_a, shape_b=shape_b, contract_dims=pairs, alpha=1.5, beta=-0.5)
    got = _run(webgpu, fields, a, b, c, one_buffer)
    want = _run(CpuBackend(), fields, a, b, c, False)
    k = int(np.prod([shape_a[i] for i, _ in pairs]))
    magnitude = 1.5 * np.tensordot(np.abs(a.reshape(shape_a)).astype(np.float64),
                                   np.abs(b.reshape(shape_b)).astype(np.float64),
                                   ([i for i, _ in pairs], [j for _, j in pairs])).reshape(-1) + 0.5 * np.abs(c)
    assert np.all(np.abs(got - want) <= (k + 3) * 2.0 ** -23 * magnitude)


def test_the_gather_reads_in_place_across_unit_axes_and_splits_the_others():
    instr = TensorContract(output=Address.BufferOffset(1), a=Address.BufferOffset(2), b=Address.BufferOffset(3),
                           shape_a=(9, 5, 1, 17), shape_b=(17, 3, 7, 5), contract_dims=((3, 0), (1, 3)))
    spec = contract_spec(instr)
    assert spec.gather_a is None and not spec.trans_a          # (9, 5, 1, 17) as 9 x 85: the unit axis moves freely
    # B's rows: its paired axes 3 (size 5, stride 1) then 0 (17, stride 105); columns: axes 1 and 2
    assert spec.gather_b == (((5, 1), (17, 105)), ((3, 35), (7, 5)))
    assert (spec.m, spec.n, spec.k) == (9, 21, 85)
