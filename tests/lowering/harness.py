"""Run a program on the reference executor and through its LoweringPlan, and compare what they did."""

from __future__ import annotations

import numpy as np

from atlas_web.errors import AtlasTrap
from atlas_web.isa.addresses import make_pointer
from atlas_web.launch import LaunchConfig
from atlas_web.lowering import plan_program
from atlas_web.reference.exec_store import MemoryStore
from atlas_web.reference.executor import Machine, prepare
from atlas_web.verify import verify

from .interpreter import LaunchOutcome, PlanInterpreter

__all__ = ["run_reference", "run_lowered", "assert_same_launch", "pointer"]

#: handles the buffers of a launch get, in order (as both the reference and a fresh backend number them)
FIRST_HANDLE = 2


def pointer(buffer_number: int, offset: int = 0) -> int:
    """The pointer to byte ``offset`` of the ``buffer_number``-th buffer of a launch (0 first)."""
    return make_pointer(FIRST_HANDLE + buffer_number, offset)


def _presets_types(presets) -> dict:
    return {reg: ty for reg, (ty, _value) in (presets or {}).items()}


def run_reference(program, config: LaunchConfig, buffers: list[bytes], *, presets=None,
                  budget: int = 1 << 24) -> LaunchOutcome:
    """Run ``program`` on the reference executor over fresh buffers holding ``buffers``."""
    info = verify(program, preset_types=_presets_types(presets))
    memory = MemoryStore()
    handles = []
    for data in buffers:
        alloc = memory.allocate("buffer", max(len(data), 1))
        memory.get(alloc.handle)[1][:len(data)] = np.frombuffer(data, dtype=np.uint8)
        handles.append(alloc.handle)
    assert handles == list(range(FIRST_HANDLE, FIRST_HANDLE + len(buffers)))
    machine = Machine(prepare(program, info), config, memory, budget, np.zeros(96, dtype=np.float64))
    machine.preset(presets or {})
    trap = None
    try:
        machine.run()
    except AtlasTrap as error:
        trap = (error.code, error.instruction_index, error.lane)
    out = {h: memory.get(h)[1].tobytes() for h in handles}
    return LaunchOutcome(out, trap, [int(j) for j in machine.backjumps])


def run_lowered(program, config: LaunchConfig, buffers: list[bytes], *, presets=None, budget: int = 1 << 24,
                form: str = "structured") -> LaunchOutcome:
    """Run ``program`` through its LoweringPlan in the test interpreter over fresh buffers."""
    info = verify(program, preset_types=_presets_types(presets))
    plan = plan_program(info, form=form)
    memory = {FIRST_HANDLE + k: bytearray(data if data else b"\0") for k, data in enumerate(buffers)}
    return PlanInterpreter(plan, config, memory, presets, budget).run()


def assert_same_launch(program, config: LaunchConfig, buffers: list[bytes], *, presets=None,
                       budget: int = 1 << 24, forms=("structured", "dispatch")) -> LaunchOutcome:
    """Both runs (each structuring form) give the same buffers, trap and backward-jump counts;
    returns the reference's outcome."""
    expected = run_reference(program, config, buffers, presets=presets, budget=budget)
    for form in forms:
        got = run_lowered(program, config, buffers, presets=presets, budget=budget, form=form)
        assert got.trap == expected.trap, f"{form}: trap {got.trap}, reference {expected.trap}"
        assert got.jumps == expected.jumps, f"{form}: backward jumps {got.jumps}, reference {expected.jumps}"
        # both run every lane of a trapping stage to its end, so even then the buffers agree
        assert got.buffers == expected.buffers, f"{form}: buffers differ"
    return expected
