"""Random control flow (hypothesis): the LoweringPlan, run by the test interpreter in both forms,
does what the reference executor does: same buffers, trap and backward jumps in every lane."""

from __future__ import annotations

from hypothesis import event, given

from atlas_web.lowering import plan_program
from atlas_web.verify import verify

from .harness import assert_same_launch
from .strategies import RandomLaunch, control_flow_launches


def _describe(launch: RandomLaunch) -> None:
    info = verify(launch.program, preset_types={reg: ty for reg, (ty, _v) in launch.presets.items()})
    plan = plan_program(info)
    event(f"segments: {min(len(plan.segments), 3)}{'+' if len(plan.segments) >= 3 else ''}")
    event(f"stages: {len(plan.stages)}")
    event("irreducible" if any(not s.reducible for s in plan.segments) else "reducible")


@given(control_flow_launches())
def test_random_control_flow_matches_the_reference(launch: RandomLaunch):
    _describe(launch)
    outcome = assert_same_launch(launch.program, launch.config, launch.buffers, presets=launch.presets,
                                 budget=launch.budget)
    event("trapped" if outcome.trap else "ran to the end")
