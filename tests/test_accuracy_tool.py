"""The accuracy tool (``atlas_web.accuracy``) measures any backend against the reference per (operation, type)."""

from __future__ import annotations

import struct

import pytest

from atlas_web.accuracy import measure, operation_key, render_table, table_path
from atlas_web.isa import MapOperation, ReduceOperation
from atlas_web.reference import CpuBackend

pytest.importorskip("numpy")


class _OneUlpOff(CpuBackend):
    """The reference, but every finite non-zero f32 it copies out is one ulp away (the lowest bit flipped)."""

    def copy_from_buffer(self, handle, out=None, offset=0):
        raw = bytearray(super().copy_from_buffer(handle, out, offset))
        for i in range(0, len(raw) - 3, 4):
            bits = struct.unpack_from("<I", raw, i)[0]
            if bits & 0x7F800000 != 0x7F800000 and bits & 0x7FFFFFFF:
                struct.pack_into("<I", raw, i, bits ^ 1)
        return bytes(raw)


def test_the_reference_measures_bit_exact_against_itself():
    assert measure(CpuBackend(), seeds=range(1), only={"EXP", "ParallelMap.Exp"}) == {}


def test_an_error_of_one_ulp_is_measured_as_one():
    table = measure(_OneUlpOff(), seeds=range(1), only={"ADD", "ParallelMap.Exp"})
    assert table[("ADD", "F32")] == 1.0 and table[("ParallelMap.Exp", "F32")] == 1.0
    # the other float types are measured too (flipping bits of 4-byte words puts them off by other amounts)
    assert {ty for op, ty in table} >= {"F32", "F64"} and all(ulps > 0 for ulps in table.values())


def test_keys_and_table_text():
    assert operation_key(MapOperation.Exp) == "ParallelMap.Exp"
    assert operation_key(ReduceOperation.Sum) == "ParallelReduce.Sum" and operation_key("FMA") == "FMA"
    text = render_table({("EXP", "F32"): 1.0, ("LOG", "F16"): float("inf")}, "wasm")
    namespace: dict = {}
    exec(compile(text, "ulp_table.py", "exec"), namespace)
    assert namespace["MEASURED_ULPS"] == {("EXP", "F32"): 1.0, ("LOG", "F16"): float("inf")}
    assert "python -m atlas_web.accuracy wasm --write" in text
    from wasm_backend import WasmBackend
    assert table_path(WasmBackend).parent.name == "wasm_backend"
