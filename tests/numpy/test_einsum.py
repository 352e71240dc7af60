"""``einsum`` on every available backend against ``numpy.einsum`` computed here: matrix and batched
products, inner and outer products, transposes, sums, three operands, implicit output, integer
operands, under jit, and the errors naming the subscripts and shapes."""

from __future__ import annotations

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web import ArrayError

from .helpers import check

RNG = np.random.default_rng(1411)

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(7,), (7,)]),
    ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("ijk->k", [(2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 2)]), ("ijk,jl->lik", [(2, 3, 4), (3, 5)]),
    ("ab,cd->", [(2, 3), (4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]),
]


@pytest.fixture(params=["kernel", "matmul"])
def path(request, device, monkeypatch):
    """Each case runs with the device as it is (TensorContract where it has it) and with TensorContract
    hidden (transposes and matmul)."""
    if request.param == "matmul":
        real = device.supports
        monkeypatch.setattr(device, "supports", lambda op, ty=None: op != "TensorContract" and real(op, ty))
    return request.param


@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_like_numpy(device, path, subscripts, shapes):
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    out = anp.einsum(subscripts, *(anp.array(a, device=device) for a in arrays))
    check(out, np.einsum(subscripts, *arrays), rtol=1e-5, atol=1e-5)


def test_integer_operands_and_jit(device):
    a, b = RNG.integers(-5, 5, (3, 4)).astype(np.int32), RNG.integers(-5, 5, (4, 2)).astype(np.int32)
    check(anp.einsum("ij,jk->ki", anp.array(a, device=device), anp.array(b, device=device)),
          np.einsum("ij,jk->ki", a, b))
    x, y = RNG.standard_normal((2, 3, 4)).astype(np.float32), RNG.standard_normal((2, 4, 3)).astype(np.float32)
    fast = anp.jit(lambda p, q: anp.relu(anp.einsum("bij,bjk->bki", p, q)))
    check(fast(anp.array(x, device=device), anp.array(y, device=device)),
          np.maximum(np.einsum("bij,bjk->bki", x, y), 0), rtol=1e-5, atol=1e-5)


def test_errors_name_the_subscripts_and_shapes(device):
    a = anp.array(np.ones((3, 4), np.float32), device=device)
    with pytest.raises(ArrayError, match=r"einsum\('ij,jk->ik', float32\[3, 4\], float32\[3, 4\]\): label 'j'"):
        anp.einsum("ij,jk->ik", a, a)
    with pytest.raises(ArrayError, match="names 3 axes of an array of 2"):
        anp.einsum("ijk->i", a)
    with pytest.raises(ArrayError, match="a diagonal"):
        anp.einsum("ii->i", anp.array(np.ones((3, 3), np.float32), device=device))
    with pytest.raises(ArrayError, match="2 terms for 1 operands"):
        anp.einsum("ij,jk", a)


def test_pairs_without_batch_labels_are_one_tensor_contract(device):
    a, b = RNG.standard_normal((2, 3, 4)).astype(np.float32), RNG.standard_normal((4, 3, 5)).astype(np.float32)
    x, y = anp.array(a, device=device), anp.array(b, device=device)
    contract = anp.jit(lambda p, q: anp.einsum("ijk,kjl->li", p, q))
    check(contract(x, y), np.einsum("ijk,kjl->li", a, b), rtol=1e-5, atol=1e-5)
    kinds = [kind for kind, _ in contract.trace_steps(x, y)]
    if device.supports("TensorContract", anp.float32):
        assert kinds == ["KernelNode", "MapNode"]   # the contraction, then the transpose to "li"
    else:
        assert "KernelNode" not in kinds
