"""A representative subset of the conformance programs on both browser backends in headless Chromium
(wasm through JsRunner, webgpu through JsWebGpuDriver), compared with the reference computed natively
in the same test.

The subset takes every case of the small families (control flow, presets, budgets, Atlas state) and an
evenly spaced sample of the large ones (per-lane instructions, memory, pools, traps, cooperative
steps); the spacing is chosen so that the types rotate through the sample. Each backend runs all of
its cases in one page evaluation (browser_jobs.run_jobs), each case on a fresh backend so that the
program's handles are those of the native run. A summary per backend goes to
artifacts/conformance-<backend>.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atlas_web.reference import CpuBackend
from tests.conformance import atlas_cases, control_cases, cooperative_cases, lane_cases, memory_cases, trap_cases
from tests.conformance.harness import Result, case_handles, compare, run_case

from . import browser_jobs
from .conftest import run_python

#: (family, cases, sample step): every ``step``-th case of each family (steps are prime to the type counts)
FAMILIES = (
    ("lane", lane_cases.lane_cases, 29),
    ("memory", memory_cases.memory_cases, 23),
    ("pool", memory_cases.pool_cases, 7),
    ("control", control_cases.control_cases, 1),
    ("preset", control_cases.preset_cases, 1),
    ("trap", trap_cases.trap_cases, 3),
    ("budget", trap_cases.budget_cases, 1),
    ("cooperative", cooperative_cases.cooperative_cases, 17),
    ("atlas", atlas_cases.atlas_cases, 1),
)
#: how a fresh backend is made in the page, per backend (webgpu shares one device across its cases)
NEW_BACKEND = {
    "wasm": "from wasm_backend import WasmBackend\nnew_backend = WasmBackend\n",
    "webgpu": "from webgpu_backend import WebGpuBackend\n"
              "from webgpu_backend.drivers.js_webgpu import JsWebGpuDriver\n"
              "driver = await JsWebGpuDriver.create()\n"
              "new_backend = lambda: WebGpuBackend(driver=driver)\n",
}
JOBS_SOURCE = Path(browser_jobs.__file__).read_text(encoding="utf-8")


def _runner_of(case):
    """The native runner of a case: presets and budgets, host pools, or the plain harness."""
    if isinstance(case, control_cases.PresetCase):
        return control_cases.run_preset_case
    if isinstance(case, memory_cases.PoolCase):
        return memory_cases.run_pool_case
    return run_case


@pytest.fixture(scope="module")
def subset():
    cases = [case for _, make, step in FAMILIES for case in make()[::step]]
    assert len({case.name for case in cases}) == len(cases)
    return cases


@pytest.fixture(scope="module")
def expected(subset):
    """The reference's result of every case, natively (each on a fresh backend, as in the browser)."""
    return [_runner_of(case)(CpuBackend(), case) for case in subset]


def _run_in_browser(page, backend_name: str, cases) -> list[dict]:
    encoded = browser_jobs.encode_jobs([browser_jobs.job_of(case) for case in cases])
    code = (f"import sys, types\n"
            f"jobs_module = types.ModuleType('browser_jobs')\n"
            f"exec(compile({JOBS_SOURCE!r}, 'browser_jobs.py', 'exec'), jobs_module.__dict__)\n"
            + NEW_BACKEND[backend_name] +
            f"result = await jobs_module.run_jobs(new_backend, {encoded!r})\n")
    return browser_jobs.decode_results(run_python(page, code))


def _problems(case, want: Result, got: dict) -> list[str]:
    if got["error"] is not None:
        return [got["error"]]
    if not got["supported"]:
        return [] if got["unsupported_raised"] else ["supports() says no, yet it ran without UnsupportedOperation"]
    if got["unsupported_raised"]:
        return ["supports() says yes, yet it raised UnsupportedOperation"]
    tolerance = got["tolerance"]
    if isinstance(case, cooperative_cases.CooperativeCase):
        tolerance = cooperative_cases.reduce_tolerance(case, tolerance)
    problems = compare(case, want, Result(got["outputs"], got["trap"]), tolerance)
    if want.trap_message is not None and got.get("message") is not None:
        # the one trap report: the message, numbers included, read in the page as natively
        handles = browser_jobs.job_of(case)["handles"][:len(case.buffers)]
        message = case_handles(got["message"], handles, case.program(browser_jobs.job_of(case)["handles"]))
        if message != want.trap_message:
            problems.append(f"trap message {message!r}, the reference's {want.trap_message!r}")
    if case.name in atlas_cases.RESONANCE_CASES:
        problems += atlas_cases.resonance_problems(case, want.resonance, got["resonance"])[:3]
    return problems


@pytest.mark.parametrize("backend_name", ["wasm", "webgpu"])
def test_conformance_subset_matches_the_native_reference(backends_page, artifacts, subset, expected,
                                                         backend_name):
    results = _run_in_browser(backends_page, backend_name, subset)
    assert [r["name"] for r in results] == [case.name for case in subset]
    report = {case.name: _problems(case, want, got) for case, want, got in zip(subset, expected, results)}
    ran = [r["name"] for r in results if r["supported"] and r["error"] is None]
    (artifacts / f"conformance-{backend_name}.json").write_text(json.dumps({
        "cases": len(subset), "ran": len(ran), "unsupported": [r["name"] for r in results if not r["supported"]],
        "failures": {name: problems for name, problems in report.items() if problems}}, indent=2))
    failures = [f"{name}: {'; '.join(problems)[:400]}" for name, problems in report.items() if problems]
    assert not failures, f"{backend_name} in Chromium: {len(failures)} of {len(subset)} cases differ from the " \
                         "reference:\n" + "\n".join(failures[:25])
    assert len(ran) >= len(subset) // 2, f"{backend_name} ran only {len(ran)} of {len(subset)} cases"
