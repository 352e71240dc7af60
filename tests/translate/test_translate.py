"""JSON kernels and circuits translated to Atlas programs, run on every backend against NumPy written
here, equal to the same operations run with atlas_web.numpy, round-tripped, and refused with errors
naming the op, wire and shapes."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import atlas_web.numpy as anp
from atlas_web.errors import ProgramError
from atlas_web.jsonform import program_from_json, program_to_json
from atlas_web.translate import (circuit_to_kernel, circuit_to_program, json_to_program, kernel_function,
                                 kernel_to_circuit)

KERNEL = {
    "format": "atlas-web-kernel", "version": 1, "name": "scaled_relu",
    "inputs": [{"name": "x", "shape": [3, 40], "dtype": "float32"},
               {"name": "bias", "shape": [40], "dtype": "float32"},
               {"name": "k", "shape": [3, 1], "dtype": "int16"}],
    "ops": [{"op": "multiply", "in": ["x", 2.0], "out": "t0"},
            {"op": "subtract", "in": ["t0", "bias"], "out": "t1"},
            {"op": "relu", "in": ["t1"], "out": "y"},
            {"op": "add", "in": ["k", 1], "out": "k1"},
            {"op": "multiply", "in": ["y", "k1"], "out": "z"},
            {"op": "greater", "in": ["z", 1.5], "out": "big"},
            {"op": "where", "in": ["big", "z", -1.0], "out": "w"},
            {"op": "astype", "in": ["w"], "dtype": "int16", "out": "w16"}],
    "outputs": ["y", "z", "big", "w16"],
}


def _inputs():
    rng = np.random.default_rng(1)
    return {"x": (rng.standard_normal((3, 40)) * 3).astype(np.float32),
            "bias": rng.standard_normal(40).astype(np.float32), "k": np.array([[0], [2], [-3]], np.int16)}


def test_json_kernel_against_numpy(device):
    program, bindings = json_to_program(KERNEL)
    data = _inputs()
    got = {name: a.to_host() for name, a in bindings.run(program, device, data).items()}
    x, bias, k = data["x"], data["bias"], data["k"]
    y = np.maximum(x * np.float32(2.0) - bias, np.float32(0))
    z = y * (k + 1)  # int16 + 1 stays int16; float32 * int16 is float32 (NumPy 2)
    assert z.dtype == np.float32
    assert got["y"].dtype == np.float32 and got["y"].tobytes() == y.tobytes()
    assert got["z"].dtype == np.float32 and got["z"].tobytes() == z.tobytes()
    np.testing.assert_array_equal(got["big"], z > 1.5)
    assert got["w16"].dtype == np.int16
    np.testing.assert_array_equal(got["w16"], np.where(z > 1.5, z, -1.0).astype(np.int16))


def test_same_bits_as_the_array_operations(device):
    """The kernel's program, its function run eagerly and under jit give one result."""
    program, bindings = json_to_program(KERNEL)
    data = _inputs()
    translated = bindings.run(program, device, data)
    arrays = [anp.array(data[n], device=device) for n in ("x", "bias", "k")]
    fn = kernel_function(KERNEL)
    for result in (fn(*arrays), anp.jit(fn)(*arrays)):
        for name, a in zip(KERNEL["outputs"], result):
            assert a.dtype == translated[name].dtype and a.shape == translated[name].shape
            assert a.to_host().tobytes() == translated[name].to_host().tobytes(), name


def test_transcendental_chain(device):
    kernel = {"inputs": [{"name": "x", "shape": [1000], "dtype": "float32"}],
              "ops": [{"op": "tanh", "in": ["x"], "out": "t"}, {"op": "exp", "in": ["t"], "out": "e"},
                      {"op": "silu", "in": ["e"], "out": "s"}, {"op": "div", "in": ["s", 3], "out": "y"}],
              "outputs": ["y"]}
    x = np.linspace(-4, 4, 1000, dtype=np.float32)
    program, bindings = json_to_program(json.dumps(kernel))
    y = bindings.run(program, device, {"x": x})["y"].to_host()
    e = np.exp(np.tanh(x.astype(np.float64)))
    np.testing.assert_allclose(y, e / (1 + np.exp(-e)) / 3, rtol=1e-5)


CIRCUIT = {"format": "atlas-web-circuit", "version": 1,
           "wires": {"a": {"shape": [64], "dtype": "float32"}, "b": {"shape": [64], "dtype": "float32"},
                     "c": {"shape": [], "dtype": "float32"}},
           "gates": [{"op": "mul", "in": ["a", "b"], "out": "ab"}, {"op": "add", "in": ["ab", "c"], "out": "s"},
                     {"op": "max", "in": ["s", 0.25], "out": "m"}, {"op": "neg", "in": ["m"], "out": "out"}],
           "outputs": ["out"]}


def test_circuit_against_numpy(device):
    program, bindings = circuit_to_program(CIRCUIT)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    c = np.array(0.125, np.float32)
    out = bindings.run(program, device, {"a": a, "b": b, "c": c})["out"].to_host()
    assert out.tobytes() == (-np.maximum(a * b + c, np.float32(0.25))).tobytes()


def test_round_trips():
    kernel = circuit_to_kernel(CIRCUIT)
    assert kernel_to_circuit(kernel) == CIRCUIT
    assert circuit_to_kernel(kernel_to_circuit(KERNEL)) == KERNEL
    assert json.loads(json.dumps(KERNEL)) == KERNEL
    p1, b1 = circuit_to_program(CIRCUIT)
    p2, b2 = json_to_program(json.dumps(kernel))
    assert p1 == p2 and b1 == b2 and p1.to_text() == p2.to_text()
    program, _ = json_to_program(KERNEL)
    assert program_from_json(program_to_json(program)) == program


def _broken_of(kernel, path, value):
    kernel = copy.deepcopy(kernel)
    target = kernel
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return kernel


def _broken(path, value):
    return _broken_of(KERNEL, path, value)


@pytest.mark.parametrize("kernel, message", [
    (_broken(("ops", 1, "op"), "frobnicate"), r"ops\[1\]: 'frobnicate' is not an operation"),
    (_broken(("ops", 1, "op"), "power"), r"ops\[1\]: 'power' has no per-lane form"),
    (_broken(("ops", 1, "in"), ["t0", "nope"]),
     r"ops\[1\] \(subtract\): in\[1\]: value 'nope' is used before it is defined"),
    (_broken(("ops", 2, "in"), ["t2"]), r"ops\[2\] \(relu\): in\[0\]: value 't2' is used before"),
    (_broken(("inputs", 1, "shape"), [41]), r"ops\[1\] \(subtract\): shapes \(3, 40\), \(41,\) do not broadcast"),
    (_broken(("inputs", 0, "dtype"), "float7"), r"inputs\[0\].dtype: 'float7' is not an array element type"),
    (_broken(("inputs", 0, "shape"), [3, -1]), r"inputs\[0\].shape: expected a list of sizes >= 0"),
    (_broken(("ops", 0, "in"), ["x"]), r"ops\[0\] \(multiply\): takes 2 input\(s\), got 1"),
    (_broken(("ops", 1, "out"), "t0"), r"ops\[1\] \(subtract\): out: value 't0' is already defined"),
    (_broken(("outputs",), ["y", "bias"]), r"outputs: 'bias' has shape \(40,\), 'y' \(3, 40\)"),
    (_broken(("outputs",), ["q"]), r"outputs\[0\]: value 'q' is not an input"),
    (_broken(("ops", 0, "attrs"), {}), r"ops\[0\]: unknown field\(s\) 'attrs'"),
    (_broken(("ops", 4, "op"), "exp"), r"ops\[4\] \(exp\): takes 1 input\(s\), got 2"),
    ("{not json", r"kernel: not JSON"),
])
def test_errors_name_the_place(kernel, message):
    with pytest.raises(ProgramError, match=message):
        json_to_program(kernel)


def test_circuit_errors_name_gates_and_wires():
    circuit = copy.deepcopy(CIRCUIT)
    circuit["gates"][1]["in"] = ["ab", "d"]
    with pytest.raises(ProgramError, match=r"gates\[1\] \(add\): in\[1\]: wire 'd' is used before it is driven"):
        circuit_to_program(circuit)
    circuit = copy.deepcopy(CIRCUIT)
    circuit["gates"][0]["op"] = "xor"
    with pytest.raises(ProgramError, match=r"gates\[0\]: 'xor' is not an operation"):
        circuit_to_program(circuit)
    circuit = copy.deepcopy(CIRCUIT)
    circuit["wires"]["b"]["shape"] = [65]
    with pytest.raises(ProgramError, match=r"gates\[0\] \(multiply\): shapes \(64,\), \(65,\) do not broadcast"):
        circuit_to_program(circuit)
    with pytest.raises(ProgramError, match="circuit: unknown field"):
        circuit_to_program({**CIRCUIT, "nets": []})


def test_run_checks_inputs(device):
    program, bindings = json_to_program(KERNEL)
    data = _inputs()
    with pytest.raises(ProgramError, match="run: input 'k' is missing"):
        bindings.run(program, device, {"x": data["x"], "bias": data["bias"]})
    with pytest.raises(ProgramError, match=r"run: input 'bias' has shape \(39,\)"):
        bindings.run(program, device, {**data, "bias": data["bias"][:39]})


REDUCE = {"inputs": [{"name": "x", "shape": [6, 50], "dtype": "float32"},
                     {"name": "w", "shape": [50], "dtype": "float32"}],
          "ops": [{"op": "sub", "in": ["x", 0.5], "out": "t"}, {"op": "relu", "in": ["t"], "out": "r"},
                  {"op": "mul", "in": ["r", "w"], "out": "p"},
                  {"op": "sum", "in": ["p"], "axis": -1, "keepdims": True, "out": "s"}],
          "outputs": ["s"]}


def test_a_final_reduction(device):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 50)).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    program, bindings = json_to_program(REDUCE)
    got = bindings.run(program, device, {"x": x, "w": w})["s"].to_host()
    assert got.shape == (6, 1) and got.dtype == np.float32
    expected = (np.maximum(x.astype(np.float64) - 0.5, 0) * w).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    eager = kernel_function(REDUCE)(anp.array(x, device=device), anp.array(w, device=device))
    assert eager.to_host().tobytes() == got.tobytes()  # an axis reduction folds in eager's order
    whole = copy.deepcopy(REDUCE)
    whole["ops"][-1] = {"op": "max", "in": ["p"], "out": "m"}
    whole["outputs"] = ["m"]
    program, bindings = json_to_program(whole)
    assert bindings.run(program, device, {"x": x, "w": w})["m"].to_host() == np.float32(
        (np.maximum(x - np.float32(0.5), 0) * w).max())


def test_reduction_errors():
    extra = copy.deepcopy(REDUCE)
    extra["ops"].append({"op": "exp", "in": ["s"], "out": "e"})
    extra["outputs"] = ["e"]
    with pytest.raises(ProgramError, match=r"ops\[3\] \(sum\): a reduction must be the last operation"):
        json_to_program(extra)
    bad = _broken_of(REDUCE, ("ops", 3, "axis"), 2)
    with pytest.raises(ProgramError, match=r"ops\[3\] \(sum\): axis 2 is out of range"):
        json_to_program(bad)
    bad = _broken_of(REDUCE, ("ops", 1, "axis"), 0)
    with pytest.raises(ProgramError, match=r"ops\[1\] \(relu\): axis and keepdims are the reductions' attributes"):
        json_to_program(bad)
