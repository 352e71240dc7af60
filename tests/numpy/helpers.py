"""Helpers of the array tests: compare an Array with the NumPy result computed in the test."""

from __future__ import annotations

import numpy as np


def check(actual, expected, rtol: float = 1e-6, atol: float = 0.0) -> None:
    """``actual`` (an Array) has ``expected``'s shape and dtype and its values (floats within ``rtol``
    and ``atol``, NaN where NaN; integers and booleans exactly)."""
    expected = np.asarray(expected)
    host = actual.to_host()
    assert isinstance(host, np.ndarray)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert host.shape == expected.shape
    assert actual.dtype_name == expected.dtype.name, (actual.dtype_name, expected.dtype.name)
    assert host.dtype == expected.dtype
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(host, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(host, expected)


def has(device, ty) -> bool:
    """Whether ``device`` loads and stores ``ty`` (asked, never by name)."""
    return device.supports("LDG", ty) and device.supports("STG", ty)
