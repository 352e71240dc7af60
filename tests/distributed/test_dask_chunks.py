"""atlas arrays as Dask chunks without a cluster (Dask's synchronous scheduler, cpu backend): operators,
reductions and compute() on atlas chunks against NumPy, the serializer's round trip (0-d and bool arrays
included), and NumPy's reductions on an atlas array (np.sum passes out=None; any other out is refused)."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from distributed.protocol import deserialize, serialize

import atlas_web.numpy as anp
from atlas_web import ArrayError
from atlas_web.distributed.dask_chunks import to_atlas, to_numpy


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="sync"):
        yield


def test_operators_and_reductions_on_atlas_chunks_match_numpy():
    x = np.arange(-10, 14, dtype=np.int32).reshape(4, 6)
    a = to_atlas(da.from_array(x, chunks=(2, 3)), backend="cpu")
    assert isinstance(a.blocks[1, 1].compute(), anp.Array)
    y = a * a - 3
    whole = y.compute()
    assert isinstance(whole, anp.Array) and np.asarray(whole.to_host()).tobytes() == (x * x - 3).tobytes()
    for got, want in ((y.sum(), (x * x - 3).sum()), (y.max(), (x * x - 3).max()), (y.min(), (x * x - 3).min()),
                      (y.sum(axis=0), (x * x - 3).sum(axis=0))):
        value = got.compute()
        assert isinstance(value, anp.Array) and np.asarray(value.to_host()).tolist() == want.tolist()
    assert to_numpy(y).compute().tobytes() == (x * x - 3).tobytes()


@pytest.mark.parametrize("value", [np.float32(2.5), np.arange(6, dtype=np.float64).reshape(2, 3),
                                   np.array([True, False, True])])
def test_an_atlas_array_travels_as_its_bytes(value):
    array = anp.asarray(value, device="cpu")
    header, frames = serialize(array)
    assert header["serializer"] == "dask" and len(frames) == 1
    back = deserialize(header, frames)
    assert isinstance(back, anp.Array) and back.shape == array.shape and back.dtype == array.dtype
    assert np.asarray(back.to_host()).tobytes() == np.asarray(value).tobytes()


def test_numpy_reductions_call_the_array_methods():
    a = anp.asarray(np.arange(5, dtype=np.float32), device="cpu")
    assert float(np.sum(a).to_host()) == 10.0 and float(np.max(a, keepdims=True).to_host()[0]) == 4.0
    with pytest.raises(ArrayError, match="out="):
        a.sum(out=np.empty(()))
