"""Every example on every available backend, compared with its independently computed expected output."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import pytest

import examples
from atlas_web import ExecutionFailed, InvalidBuffer, Program, UnsupportedOperation
from examples import EXAMPLE_MODULES, FIRST_HANDLE, compare_outputs, run_example

from demo.native import CHECK_ERROR, CHECK_OK, CHECK_UNSUPPORTED, format_table, main as demo_main, run_demo

# 1 lane; not a multiple of the 64-lane blocks (spare lanes); every byte value for atlas_bytes
SIZES = (1, 300)


def _build(name: str, size: int) -> examples.Example:
    return importlib.import_module(f"examples.{name}").build(size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", EXAMPLE_MODULES)
def test_example_matches_expected_output(available_backend, name, size):
    backend = available_backend
    example = _build(name, size)
    if all(backend.supports(op, ty) for op, ty in example.needs()):
        actual = run_example(example, backend)
        assert compare_outputs(example, actual) == []
    else:  # a backend that cannot compile an instruction says so before running anything
        with pytest.raises(UnsupportedOperation):
            run_example(example, backend)


@pytest.mark.parametrize("name", EXAMPLE_MODULES)
def test_example_program_is_valid_text(name):
    example = _build(name, 10)
    program = example.program_object()
    assert isinstance(program, Program)
    program.verify()
    assert Program.from_text(program.to_text()) == program
    assert example.name == name and example.description
    handles = [example.handle_of(spec.name) for spec in example.buffers]
    assert handles == list(range(FIRST_HANDLE, FIRST_HANDLE + len(example.buffers)))
    for output in example.outputs:
        example.buffer(output.buffer)


def test_expected_outputs_are_right_on_known_values():
    from examples.collatz import collatz_steps
    assert [collatz_steps(x) for x in (1, 2, 3, 6, 27)] == [0, 1, 7, 8, 111]
    softmax = _build("softmax", 50).expected_outputs()["out"]
    assert math.isclose(math.fsum(softmax), 1.0, rel_tol=1e-12)
    atlas = _build("atlas_bytes", 300).expected_outputs()
    assert atlas["class"][:3] == [0, 48, 24]  # classify(0), classify(1), classify(2)
    assert atlas["mirror"][16] == 0  # mirror(classify(16) = 3) = 0
    assert atlas["neighbour"][0] == 1  # neighbours(0)[0]
    assert atlas["boundary"][1] == 51 * 12288 + 1 * 256 + 1  # BoundMap(mirror(48), 1, 1)
    relu = _build("relu_chain", 40).expected_outputs()
    xs = _build("relu_chain", 40).buffer("x").data
    assert all(p - n == x for p, n, x in zip(relu["pos"], relu["neg"], xs))


def test_compare_outputs_reports_each_differing_buffer():
    example = _build("atlas_bytes", 20)
    expected = example.expected_outputs()
    actual = {name: list(values) for name, values in expected.items()}
    assert compare_outputs(example, actual) == []
    actual["mirror"][5] += 1
    actual["boundary"] = actual["boundary"][:-1]
    problems = compare_outputs(example, actual)
    assert problems[0].startswith("mirror: 1 of 20 values differ; first at 5")
    assert problems[1] == "boundary: 19 values, expected 20"
    softmax = _build("softmax", 4)
    want = softmax.expected_outputs()
    near = {"out": [v * (1 + 1e-7) for v in want["out"]]}
    far = {"out": [v * (1 + 1e-3) for v in want["out"]]}
    assert compare_outputs(softmax, near) == [] and len(compare_outputs(softmax, far)) == 1


def test_examples_need_a_fresh_backend(available_backend):
    backend = available_backend
    backend.allocate_buffer(8)  # takes handle 2
    example = _build("vector_add", 4)
    with pytest.raises(ExecutionFailed, match="got handle 3, the program expects 2"):
        run_example(example, backend)
    with pytest.raises(InvalidBuffer):  # what it allocated was freed again
        backend.buffer_size(3)


def test_demo_runs_every_example_on_a_backend(available_backend_name, capsys):
    rows = run_demo(20, [available_backend_name])
    assert [row.example for row in rows] == list(EXAMPLE_MODULES)
    assert all(row.check in (CHECK_OK, CHECK_UNSUPPORTED) for row in rows), format_table(rows)
    for row in rows:
        assert (row.cold_seconds is not None) == (row.check == CHECK_OK)
    table = format_table(rows)
    assert table.splitlines()[0].split() == ["example", "backend", "check", "cold", "ms", "cached", "ms"]
    assert demo_main(["--size", "8", "--backend", available_backend_name]) == 0
    assert "vector_add" in capsys.readouterr().out


def test_demo_reports_an_unknown_backend_as_an_error(capsys):
    rows = run_demo(4, ["no-such-backend"])
    assert {row.check for row in rows} == {CHECK_ERROR}
    assert "unknown backend 'no-such-backend'" in rows[0].detail
    assert demo_main(["--size", "4", "--backend", "no-such-backend"]) == 1
    assert "no-such-backend" in capsys.readouterr().out


def test_readme_python_blocks_run(capsys):
    readme = Path(examples.__file__).resolve().parent.parent / "README.md"
    blocks = readme.read_text(encoding="utf-8").split("```python\n")[1:]
    assert len(blocks) >= 3
    for block in blocks:
        code = block.split("```", 1)[0]
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "pmap2.mul.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], 1000" in out
    assert "line 1: add.f32 takes 3 operands, got 2" in out
    assert "[10. 35. 60.]" in out   # the seed-style GEMM(c=..., a=..., b=..., m=..., n=..., k=..., alpha, beta)
    # the tour starts with arrays: relu(2x - 0.5) over a million floats and a dot product, in 4 lines
    tour = blocks[0].split("```", 1)[0]
    assert tour.startswith("import atlas_web.numpy as anp\n") and len(tour.strip().splitlines()) <= 4
    assert "2.109e+05" in out
    assert "[[-1.5, -1.5, -1.5], [1.5, 1.5, 1.5]]" in out
    assert "[[0.0], [12.0]] [[5.0, 14.0], [14.0, 50.0]]" in out
    assert "add(float32[2, 3], float32[4]): shapes (2, 3), (4,) do not broadcast" in out
    assert "2.109e+05 FusedMapNode" in out   # the same number from the jit-compiled function
    # the KernelBackend and JSON-kernel block: its printed values as the README's comments give them
    assert "[3.0, 7.0]\n27.98\n[0.0, 0.5, 2.0]\n" in out
