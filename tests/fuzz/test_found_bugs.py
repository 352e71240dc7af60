"""Bugs the campaign found, as the minimized repros it printed: each runs like the reference on every backend."""

from __future__ import annotations

import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program
from atlas_web.reference import CpuBackend

from tests.conformance.backends import compiled_backends

BACKENDS = compiled_backends()

#: (what, program text); every repro stores its result at buffer {h} (8 bytes)
REPROS = [
    # wasm loaded neighbours[class*MAX_DEGREE + (index mod 2**32)] before checking index < degree: a u64
    # index with large low bits read outside the module's memory (engine trap, then a wasmtime panic)
    ("nbr.get index past 2**32", "mov_imm.u32 r3, 95\nmov_imm.u64 r2, 18446744069642451070\n"
                                 "nbr.get r11, r3, r2\nstg.u8 [buf{h} + 0], r11\n"),
    ("nbr.get index 2**31", "mov_imm.u32 r3, 5\nmov_imm.u64 r2, 2147483648\n"
                            "nbr.get r11, r3, r2\nstg.u8 [buf{h} + 0], r11\n"),
]


def _run(backend, text):
    h = backend.allocate_buffer(8)
    try:
        try:
            backend.execute_program(Program.from_text(text.format(h=int(h))), LaunchConfig())
        except AtlasTrap as t:
            return ("trap", int(t.code), t.instruction_index, t.lane)
        return bytes(backend.copy_from_buffer(h))
    finally:
        backend.free_buffer(h)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS) or ["cpu"])
@pytest.mark.parametrize("what,text", REPROS, ids=[w for w, _ in REPROS])
def test_found_bug_repro(backend_name, what, text):
    backend = BACKENDS.get(backend_name) or CpuBackend()
    assert _run(backend, text) == _run(CpuBackend(), text)
