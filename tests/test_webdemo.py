"""webdemo natively: the page's checks, backend choices, runs, chart and session without a browser
(the reference backend stands in for the browser backends)."""

from __future__ import annotations

import asyncio
import importlib
import sys
import xml.etree.ElementTree as ET

import pytest

import examples
from atlas_web import Program
from atlas_web.registry import BackendStatus
from webdemo import chart, checks, choices, runs, session

VECTOR_SUB = """\
    pmap2.sub.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], {n}
    exit
"""


# ---- checks -----------------------------------------------------------------------------------

def test_a_good_program_passes_every_round_trip():
    text = examples.build_all(10)[2].program
    check = checks.check_program_text(text)
    assert check.ok and check.stage == checks.STAGE_DONE and check.message == ""
    assert [f.form for f in check.forms] == list(checks.ROUND_TRIPS)
    assert all(f.same and f.digest == check.digest and f.encoded_size > 0 for f in check.forms)
    assert check.digest == Program.from_text(text).digest() and check.instruction_count == 19
    assert check.summary.startswith("parses and verifies: 19 instructions")


def test_a_program_that_does_not_parse_names_the_line():
    check = checks.check_program_text("exit\nadd.f32 r1, r2\n")
    assert not check.ok and check.stage == checks.STAGE_PARSE and check.digest is None
    assert check.message.startswith("line 2") and "add.f32" in check.message
    assert check.summary == f"parse failed: {check.message}"


def test_a_program_that_does_not_verify_names_the_instruction():
    check = checks.check_program_text("add.u32 r1, r2, r3\nexit\n")  # reads registers nothing wrote: fine
    assert check.ok
    check = checks.check_program_text("mov_imm.f32 r1, 1.0\nadd.u32 r2, r1, r1\nexit\n")
    assert not check.ok and check.stage == checks.STAGE_VERIFY and check.digest is not None
    assert "instruction 1" in check.message and "r1" in check.message


def test_an_unexpected_exception_is_reported_not_raised(monkeypatch):
    def broken(program):
        raise RuntimeError("boom")
    monkeypatch.setitem(checks.ROUND_TRIPS, "json", (broken, Program.from_json))
    check = checks.check_program_text("exit\n")
    assert not check.ok and check.stage == checks.STAGE_ROUND_TRIP and check.message == "RuntimeError: boom"
    assert [f.form for f in check.forms] == ["text", "bytecode"]


def test_a_round_trip_that_changes_the_program_fails(monkeypatch):
    other = Program.from_text("mov_imm.u32 r1, 1\nexit\n")
    monkeypatch.setitem(checks.ROUND_TRIPS, "bytecode", (Program.to_bytes, lambda data: other))
    check = checks.check_program_text("exit\n")
    assert not check.ok and check.stage == checks.STAGE_ROUND_TRIP and "bytecode round trip" in check.message


def test_example_digests_cover_every_example_and_form():
    table = checks.example_digests(16)
    assert list(table) == list(examples.EXAMPLE_MODULES)
    for row in table.values():
        assert row["ok"] == "yes"
        assert row["program"] == row["text"] == row["bytecode"] == row["json"]
    assert table != checks.example_digests(17)  # the size is part of each program


# ---- choices ----------------------------------------------------------------------------------

STATUSES = [BackendStatus("cpu", True, devices=("x86_64",)), BackendStatus("wasm", False, "no js runner"),
            BackendStatus("webgpu", False, "no adapter")]


def test_unavailable_backends_say_so_with_the_reason():
    entries = choices.backend_choices(statuses=STATUSES)
    assert [e.name for e in entries] == ["auto", "wasm", "webgpu"]
    assert not any(e.available for e in entries)
    wasm = entries[1]
    assert wasm.label == f"wasm ({choices.NOT_AVAILABLE})"
    assert wasm.explanation == f"wasm: {choices.NOT_AVAILABLE}: no js runner"
    assert "webgpu: no adapter" in entries[0].reason and "wasm: no js runner" in entries[0].reason
    assert choices.resolve_choice("auto", entries) is entries[0]


def test_auto_picks_the_first_available_in_auto_order():
    statuses = [BackendStatus("wasm", True, devices=("v8",)), BackendStatus("webgpu", True, devices=("gpu",))]
    entries = choices.backend_choices(statuses=statuses)
    assert entries[0].available and entries[0].label == "auto (webgpu)"
    assert choices.resolve_choice("auto", entries).name == "webgpu"
    statuses[1] = BackendStatus("webgpu", False, "no adapter")
    entries = choices.backend_choices(statuses=statuses)
    assert choices.resolve_choice("auto", entries).name == "wasm"
    assert choices.resolve_choice("webgpu", entries).reason == "no adapter"


def test_auto_passes_over_a_software_gpu():
    statuses = [BackendStatus("wasm", True, devices=("v8",), device_type="cpu"),
                BackendStatus("webgpu", True, devices=("SwiftShader",), device_type="software-gpu")]
    entries = choices.backend_choices(statuses=statuses)
    assert entries[0].label == "auto (wasm)" and choices.resolve_choice("auto", entries).name == "wasm"
    statuses[0] = BackendStatus("wasm", False, "no js runner")
    assert choices.resolve_choice("auto", choices.backend_choices(statuses=statuses)).name == "webgpu"


def test_unknown_names():
    entries = choices.backend_choices(("auto", "nope"), statuses=STATUSES)
    assert entries[1].reason == "no backend 'nope' is registered" and not entries[0].available
    with pytest.raises(KeyError, match="unknown backend choice 'cpu'"):
        choices.resolve_choice("cpu", entries)


# ---- runs -------------------------------------------------------------------------------------

def _run(backend: str, example: examples.Example, text: str | None = None) -> runs.RunResult:
    program = example.program_object() if text is None else Program.from_text(text)
    return asyncio.run(runs.run_example_on(backend, example, program, example.buffers[0].count))


def test_an_example_runs_ok_on_the_reference_through_execute_async():
    result = _run("cpu", examples.build_all(32)[3])
    assert result.ok and result.detail == "" and result.seconds > 0
    assert result.code == "the cpu backend does not show its generated code"


def test_a_changed_program_shows_the_first_mismatch():
    example = examples.build_all(8)[0]
    result = _run("cpu", example, VECTOR_SUB.format(n=8))
    assert result.check == runs.CHECK_MISMATCH
    assert result.detail.startswith("out: 8 of 8 values differ; first at 0: got ")


def test_errors_become_checks(monkeypatch):
    example = examples.build_all(8)[0]
    result = _run("no-such-backend", example)
    assert result.check == runs.CHECK_UNAVAILABLE and "unknown backend 'no-such-backend'" in result.detail
    trap = "mov_imm.i32 r1, 1\nmov_imm.i32 r2, 0\ndiv.i32 r3, r1, r2\nexit\n"
    result = _run("cpu", example, trap)
    assert result.check == "trap" and result.seconds is None


def test_classify_error_uses_the_nearest_class():
    from atlas_web import AtlasTrap, BackendUnavailable, TrapCode
    assert runs.classify_error(BackendUnavailable("x")) == runs.CHECK_UNAVAILABLE
    assert runs.classify_error(AtlasTrap(TrapCode.MISALIGNED, 0, 0)) == "trap"
    assert runs.classify_error(KeyError("x")) == "internal error"


def test_generated_code_comes_from_the_backend_hook():
    class WithCode:
        name = "fake"

        def generated_code(self, program, config):
            return f"(module) ;; {len(program)} instructions"

    class Broken:
        name = "broken"

        def generated_code(self, program, config):
            raise ValueError("no")

    program = Program.from_text("exit\n")
    assert runs.generated_code(WithCode(), program, None) == "(module) ;; 1 instructions"
    assert runs.generated_code(Broken(), program, None) == "the broken backend could not show its code: ValueError: no"


# ---- chart ------------------------------------------------------------------------------------

def test_nice_ceiling():
    assert [chart.nice_ceiling(v) for v in (0, 0.7, 1, 1.2, 2.2, 3, 7, 12, 260)] == \
        [1.0, 1.0, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 500.0]


def test_empty_chart_is_valid_svg_that_says_so():
    svg = chart.timing_chart_svg([])
    assert ET.fromstring(svg).tag.endswith("svg") and "no timings yet" in svg


def test_chart_has_a_point_per_series_and_size_and_escapes_names():
    points = [chart.TimingPoint("wasm", 100, 0.002), chart.TimingPoint("wasm", 1000, 0.004),
              chart.TimingPoint("wasm", 1000, 0.006), chart.TimingPoint("<gpu & co>", 100, 0.001)]
    root = ET.fromstring(chart.timing_chart_svg(points))
    circles = [c for c in root.iter() if c.tag.endswith("circle") and c.get("class") != "legend"]
    assert sorted((c.get("data-series"), c.get("data-size")) for c in circles) == \
        [("<gpu & co>", "100"), ("wasm", "100"), ("wasm", "1000")]
    titles = [t.text for c in circles for t in c if t.tag.endswith("title")]
    assert "wasm, size 1000: 5.000 ms" in titles  # the mean of 4 and 6 ms
    assert len([p for p in root.iter() if p.tag.endswith("polyline")]) == 1  # one point only: no line


# ---- session ----------------------------------------------------------------------------------

def test_parse_size():
    assert session.parse_size(" 12 ") == 12
    for bad in ("", "x", "0", str(session.MAX_SIZE + 1), "1.5"):
        with pytest.raises(ValueError, match="size must be a whole number from 1 to"):
            session.parse_size(bad)


def test_session_runs_checks_and_records_timings():
    demo = session.DemoSession(choices=("auto", "cpu"))
    text = demo.program_text("collatz", 20)
    outcome = asyncio.run(demo.run(text, "collatz", 20, "auto"))
    assert outcome.status == "ok" and outcome.backend.name == "cpu"
    assert outcome.message == "ok: collatz on cpu matches the expected output"
    assert [(p.series, p.phase, p.example) for p in demo.timings] == \
        [(session.CHECKS_SERIES, "warm", "collatz"), ("cpu", "first", "collatz"), ("cpu", "warm", "collatz")]
    assert 'data-series="cpu"' in demo.chart_svg("collatz") and "data-series" not in demo.chart_svg("softmax")

    bad = asyncio.run(demo.run("nonsense r1\n", "collatz", 20, "cpu"))
    assert bad.status == session.STATUS_PROGRAM_ERROR and bad.run is None
    assert bad.check.summary.startswith("parse failed: line 1") and bad.code.startswith("no code")
    # the result line says what happened, the error box (the summary) where and why: not the same line twice
    assert bad.message == "not run: parse failed (the error is below)"
    assert len(demo.timings) == 3  # a failed check records nothing


def test_a_trap_is_named_once_on_the_result_line():
    demo = session.DemoSession(choices=("auto", "cpu"))
    outcome = asyncio.run(demo.run("mov_imm.i32 r1, 1\nmov_imm.i32 r2, 0\ndiv.i32 r3, r1, r2\nexit\n",
                                   "vector_add", 8, "cpu"))
    assert outcome.status == "trap"
    assert outcome.message.startswith("trap DIVISION_BY_ZERO at instruction 2 in lane 0: div.i32"), outcome.message


def test_an_edited_or_declaring_program_is_charted_apart_from_the_example():
    """Only the example's own program (comments aside) adds to its chart: another one's timings at the same size
    would be averaged into the example's points."""
    demo = session.DemoSession(choices=("auto", "cpu"))
    text = demo.program_text("vector_add", 16)
    for program in ("; a comment of mine\n" + text, text.replace("pmap2.add.f32", "pmap2.mul.f32"), DECLARED):
        asyncio.run(demo.run(program, "vector_add", 16, "cpu"))
    charted = [(p.example, p.series, p.phase) for p in demo.timings]
    assert charted.count(("vector_add", "cpu", "first")) == 1, charted
    assert charted.count((session.OWN_PROGRAMS_CHART, "cpu", "first")) == 2, charted
    assert [name for name, _ in demo.charts()] == ["vector_add", session.OWN_PROGRAMS_CHART]


def test_session_says_when_the_backend_is_not_available():
    demo = session.DemoSession(choices=("auto", "no-such-backend"))
    outcome = asyncio.run(demo.run(demo.program_text("vector_add", 4), "vector_add", 4, "auto"))
    assert outcome.status == runs.CHECK_UNAVAILABLE and outcome.run is None
    assert choices.NOT_AVAILABLE in outcome.message and choices.NOT_AVAILABLE in outcome.code
    with pytest.raises(KeyError, match="unknown example"):
        demo.example("nope", 4)


def test_session_runs_every_example_on_every_available_backend():
    demo = session.DemoSession(choices=("auto", "cpu", "no-such-backend"))
    seen = []

    async def on_result(result, done, total):  # the page shows each row as it comes
        seen.append((result.example, done, total))

    results = asyncio.run(demo.run_all(16, on_result))
    assert [(r.example, r.backend) for r in results] == [(name, "cpu") for name in examples.EXAMPLE_MODULES]
    assert seen == [(name, k + 1, 5) for k, name in enumerate(examples.EXAMPLE_MODULES)]
    assert all(r.ok and r.size == 16 and r.seconds is not None for r in results), results
    assert [(p.series, p.example) for p in demo.timings if p.phase == "warm"] == \
        [("cpu", name) for name in examples.EXAMPLE_MODULES]
    assert asyncio.run(session.DemoSession(choices=("auto", "no-such-backend")).run_all(16)) == []


def test_the_page_module_refuses_to_import_outside_the_browser():
    assert sys.platform != "emscripten"
    sys.modules.pop("webdemo.page", None)
    with pytest.raises(ImportError, match="runs only in the browser"):
        importlib.import_module("webdemo.page")


# ---- warm backends, declared programs, the chart per example --------------------------------------

def test_a_second_run_reuses_the_backend_and_measures_first_and_warm_launches():
    made = []

    def factory(name):
        from atlas_web.registry import get_backend
        made.append(name)
        return get_backend(name)

    warm = runs.WarmBackends(limit=1, factory=factory)
    example = examples.build_all(24)[2]  # softmax: writes e from x, so the inputs are written before each launch
    first = asyncio.run(runs.run_example_on("cpu", example, example.program_object(), 24, warm))
    again = asyncio.run(runs.run_example_on("cpu", example, example.program_object(), 24, warm))
    assert first.ok and again.ok and made == ["cpu"] and len(warm) == 1
    assert first.seconds > 0 and first.warm_seconds > 0 and again.warm_seconds > 0
    other = examples.build_all(24)[0]
    assert asyncio.run(runs.run_example_on("cpu", other, other.program_object(), 24, warm)).ok
    assert made == ["cpu", "cpu"] and len(warm) == 1  # another layout: a new backend, the old one closed
    warm.close()
    assert len(warm) == 0


DECLARED = """\
; @in a f32 = 1, 2, 3, 4
; @in b f32 random 4 10 20
; @out c f32 4
; @lanes 4 4
    pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], 4
    exit
"""


def test_a_program_declares_its_inputs_and_outputs_and_sees_them():
    from webdemo import declared
    buffers, launch = declared.parse_declarations(DECLARED)
    assert [(d.name, d.ty.name, len(d.values), d.output) for d in buffers] == \
        [("a", "F32", 4, False), ("b", "F32", 4, False), ("c", "F32", 4, True)]
    assert all(10 <= v <= 20 for v in buffers[1].values) and launch.total_threads == 4
    demo = session.DemoSession(choices=("auto", "cpu"))
    outcome = asyncio.run(demo.run(DECLARED, "vector_add", 1000, "cpu"))
    assert outcome.status == runs.CHECK_RAN and "outputs you declared" in outcome.message
    (name, shown), = outcome.run.outputs
    values = [float(v) for v in shown.strip("[]").split(", ")]
    assert name == "c" and values == [pytest.approx(a + b, rel=1e-6) for a, b in zip((1, 2, 3, 4), buffers[1].values)]


def test_declared_random_values_are_examples_inputs_of_the_buffers_type():
    """Random declared values come from examples.inputs (seeded by name and count), stored as the type."""
    import random
    from examples import inputs
    from webdemo import declared
    text = "; @in k i8 random 5000 -5 5\n; @in d f64 random 300 -1e300 1e300\n; @in x f32 random 300\n; @in n u64 random 9"
    (k, d, x, n), _ = declared.parse_declarations(text)
    assert k.values.typecode == "b" and set(k.values) == set(range(-5, 6))
    assert bytes(k.values) == bytes(inputs.randint(random.Random("k:5000"), 5000, -5, 5, "b"))
    assert d.values.typecode == "d" and all(-1e300 <= v <= 1e300 for v in d.values) and max(d.values) > 1e299
    assert bytes(x.values) == bytes(inputs.uniform_f32(random.Random("x:300"), 300, -1, 1))
    assert n.values.typecode == "Q" and all(0 <= v <= 100 for v in n.values)


@pytest.mark.parametrize("line, words", [
    ("; @in a f99 = 1", "unknown type 'f99'"), ("; @in a f32 random 0", "element count"),
    ("; @in a f16 = 1", "unknown type 'f16'"), ("; @in a u8 = 1, 256", "256 is outside the u8 range"),
    ("; @in a i32 random 8 0 3000000", "at most 2097152 integers"), ("; @in a u32 random 8 5 4", "LOW <= HIGH"),
    ("; @out c f32", "unknown directive"), ("; @in a u32 = x", "'x' is not a u32 value"),
    ("; @lanes many", "@lanes needs"), ("; @in a f32 = 1\n; @out a f32 2", "declared twice"),
])
def test_a_bad_directive_is_a_program_error_naming_its_line(line, words):
    demo = session.DemoSession(choices=("auto", "cpu"))
    outcome = asyncio.run(demo.run(line + "\nexit\n", "vector_add", 8, "cpu"))
    assert outcome.status == session.STATUS_PROGRAM_ERROR and outcome.run is None
    assert words in outcome.check.summary and "line " in outcome.check.summary
    assert outcome.message == "not run: declarations failed (the error is below)"


def test_the_chart_legend_shows_each_series_point_marker():
    """A chart of one size has no lines: the legend shows the hollow (first launch) and filled (warm) points."""
    svg = ET.fromstring(chart.timing_chart_svg([chart.TimingPoint("wasm", 1000, 0.03, phase=chart.PHASE_FIRST),
                                                chart.TimingPoint("wasm", 1000, 0.001)]))
    circles = [c for c in svg.iter() if c.tag.endswith("circle")]
    points = {(c.get("fill"), c.get("stroke")) for c in circles if c.get("data-series")}
    legend = {(c.get("fill"), c.get("stroke")) for c in circles if c.get("class") == "legend"}
    color = chart.series_color("wasm")
    assert points == legend == {("#fff", color), (color, color)}, (points, legend)


def test_chart_labels_have_no_exponent_and_colours_stay_with_their_backend():
    assert [chart.size_label(n) for n in (48, 2000, 1500, 1_048_576)] == ["48", "2k", "1.5k", "1.05M"]
    assert [chart.ms_label(v) for v in (0, 0.25, 2000, 12.5, 187.5)] == ["0", "0.25", "2,000", "12.5", "187.5"]
    one = chart.timing_chart_svg([chart.TimingPoint("webgpu", 2000, 2.0)])
    two = chart.timing_chart_svg([chart.TimingPoint("wasm", 2000, 1.0), chart.TimingPoint("webgpu", 2000, 2.0)])
    color = chart.series_color("webgpu")
    for svg in (one, two):
        assert f'stroke="{color}" stroke-width="2" data-series="webgpu"' in svg
        assert "e+" not in svg and ">2k<" in svg
    assert chart.series_color("some-backend") == chart.series_color("some-backend")
