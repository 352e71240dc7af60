"""matmul (@) and dot of atlas_web.numpy against NumPy computed here, on every available backend."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError, Type

from .helpers import check, has

RNG = np.random.default_rng(10)


SHAPES = [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((6,), (6,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
          ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 3)), ((3, 0), (0, 2))]


@pytest.mark.parametrize("sa, sb", SHAPES)
def test_matmul_like_numpy(device, sa, sb):
    a, b = RNG.normal(size=sa).astype(np.float32), RNG.normal(size=sb).astype(np.float32)
    check(anp.array(a, device=device) @ anp.array(b, device=device), a @ b, rtol=1e-5, atol=1e-5)


def test_dot_and_mixed_types(device):
    a = RNG.normal(size=(3, 3)).astype(np.float32)
    x = anp.array(a, device=device)
    check(anp.dot(x, x), a @ a, rtol=1e-5, atol=1e-5)
    check(anp.dot(x[0], x[1]), np.dot(a[0], a[1]), rtol=1e-5, atol=1e-6)
    check(anp.dot(x, 2.0), a * np.float32(2))
    i = np.int32([[1, 2], [3, 4]])
    check(anp.array(i, device=device) @ anp.array(i, device=device), i @ i)
    check(a[:2, :2] @ anp.array(np.float32([[1, 0], [0, 1]]), device=device), a[:2, :2])


def test_matmul_errors(device):
    x = anp.array(RNG.normal(size=(3, 4)).astype(np.float32), device=device)
    with pytest.raises(ArrayError,
                       match=r"matmul\(float32\[3, 4\], float32\[3, 4\]\): the inner sizes differ \(4 and 3\)"):
        x @ x
    with pytest.raises(ArrayError, match="at least 1 dimension"):
        anp.matmul(x, anp.array(2.0, device=device))


@pytest.mark.parametrize("ty", [Type.F32, Type.F64])
def test_float_matmul_runs_the_gemm_instruction_where_the_device_has_it(device, ty):
    from atlas_web.numpy.nodes import GemmNode
    from atlas_web.numpy.runtime import kernel_for, kernel_refused
    if not has(device, ty):
        return  # no arrays of this type here (float64 on WebGPU): test_creation checks the refusal
    a = RNG.normal(size=(2, 3, 4)).astype(ty.name.lower().replace("f", "float"))
    b = RNG.normal(size=(2, 4, 5)).astype(a.dtype)
    x, y = anp.array(a, device=device), anp.array(b, device=device)
    check(x @ y, a @ b, rtol=1e-5, atol=1e-5)
    check(x @ y[0], a @ b[0], rtol=1e-5, atol=1e-5)
    for node in (GemmNode(2, 3, 5, 4, ty), GemmNode(1, 6, 5, 4, ty)):  # batched, and the batch as rows
        assert kernel_for(node).program.instructions[0].INFO.name in ("GEMM", "BatchedGEMM")
        refused = kernel_refused(device, node)
        assert refused == (not device.supports(kernel_for(node).program.instructions[0], ty))
