"""The value comparison the conformance harness makes (compare_buffers) and the webgpu backend tests' harness
uses (tests/webgpu_backend/harness.py): a GPU's NaN payloads and, on a device that says it flushes f32
subnormals, flushed subnormals are not mismatches; integers and untyped buffers still compare bit for bit.
The "GPU" here is the reference behind a wrapper that reads back what such a device would write (no adapter
needed)."""

from __future__ import annotations

import struct

import pytest

from atlas_web import LaunchConfig
from atlas_web.isa import LDG, STG, Address, Type
from atlas_web.reference import CpuBackend
from tests.conformance.harness import compare_buffers
from tests.lowering.programs import GID, R, program
from tests.webgpu_backend import harness
from tests.webgpu_backend.test_memory import lane_pointer

#: f32 words: a NaN with a payload, a negative NaN, a subnormal, a negative subnormal, an ordinary value
WORDS = [0x7FA00001, 0xFFC00000, 0x00000001, 0x80400000, 0x3F800000]
CANONICAL_NAN = 0x7FC00000


class DeviceLike:
    """The reference, read back as a GPU would have written it: every NaN the canonical one and every f32
    subnormal a zero of its sign; its device_info says "flushed" when ``says_flushed``."""

    def __init__(self, says_flushed: bool):
        self.inner, self.says_flushed = CpuBackend(), says_flushed

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def device_info(self):
        return {**self.inner.device_info(), "subnormals": "flushed" if self.says_flushed else "preserved"}

    def copy_from_buffer(self, handle, *args, **kwargs):
        data = bytes(self.inner.copy_from_buffer(handle, *args, **kwargs))
        words = list(struct.unpack(f"<{len(data) // 4}I", data))
        for i, w in enumerate(words):
            if w & 0x7F800000 == 0x7F800000 and w & 0x007FFFFF:
                words[i] = CANONICAL_NAN
            elif w & 0x7F800000 == 0:
                words[i] = w & 0x80000000
        return struct.pack(f"<{len(words)}I", *words)


def _copy_program():
    """Lane i copies word i of buffer 2 (f32) to buffer 3."""
    return program(*lane_pointer(10, 2, 4), LDG(dst=R(1), src=Address.RegisterIndirect(R(10), 0), ty=Type.F32),
                   *lane_pointer(11, 3, 4), STG(dst=Address.RegisterIndirect(R(11), 0), src=R(1), ty=Type.F32))


def _run(monkeypatch, words, says_flushed: bool, types):
    monkeypatch.setattr(harness, "fresh_backend", lambda driver: DeviceLike(says_flushed))
    data = struct.pack(f"<{len(words)}I", *words)
    config = LaunchConfig(grid=(1, 1, 1), block=(len(words), 1, 1))
    return harness.assert_matches_reference(None, _copy_program(), config, [data, bytes(len(data))], types=types)


def test_nan_payloads_and_flushed_subnormals_are_no_mismatch(monkeypatch):
    got = _run(monkeypatch, WORDS, True, [Type.F32, Type.F32])
    assert struct.unpack("<5I", got.buffers[1]) == (CANONICAL_NAN, CANONICAL_NAN, 0, 0x80000000, 0x3F800000)


@pytest.mark.parametrize("words, says_flushed, types", [
    (WORDS[:2], True, None),                          # untyped: byte for byte
    (WORDS[:2], True, [Type.U32, Type.U32]),          # integers: bit for bit
    (WORDS[2:], False, [Type.F32, Type.F32]),         # flushed subnormals on a device that says it keeps them
], ids=["untyped", "integers", "subnormals-not-flushed-by-contract"])
def test_what_still_differs_is_reported(monkeypatch, words, says_flushed, types):
    with pytest.raises(AssertionError, match="reference"):
        _run(monkeypatch, words, says_flushed, types)


def test_compare_buffers_rules():
    nan_a, nan_b = struct.pack("<I", 0x7FA00001), struct.pack("<I", CANONICAL_NAN)
    assert compare_buffers([Type.F32], [nan_a], [nan_b], 0) == []
    assert compare_buffers([Type.U32], [nan_a], [nan_b], 0) != []
    assert compare_buffers([None], [nan_a], [nan_b], 0) != []
    tiny, zero = struct.pack("<f", 2.0 ** -140), struct.pack("<f", 0.0)
    assert compare_buffers([Type.F32], [tiny], [zero], 0) != []
    assert compare_buffers([Type.F32], [tiny], [zero], 0, flushed=True) == []
    assert compare_buffers([Type.F32], [tiny], [struct.pack("<f", -0.0)], 0, flushed=True) != []
    assert compare_buffers([Type.F32], [struct.pack("<f", 1.0)], [struct.pack("<f", float("nan"))], 0) != []
