"""Circuits: a JSON kernel in gate form (the seed's CircuitToIsa). Typed input wires, gates (an operation
over wires and numbers driving one new wire), output wires::

    {"format": "atlas-web-circuit", "version": 1,
     "wires": {"w0": {"shape": [4], "dtype": "float32"}, "w1": {"shape": [4], "dtype": "float32"}},
     "gates": [{"op": "mul", "in": ["w0", "w1"], "out": "w2"}], "outputs": ["w2"]}

A gate's op is any kernel operation or its short spelling (add, sub, mul, div, max, min, neg, eq, ne, lt,
le, gt, ge, select, ...). ``circuit_to_kernel`` and ``kernel_to_circuit`` convert between the two forms
(each the other's inverse on forms they produce); ``circuit_to_program`` translates through the kernel
form, its errors naming gates and wires. Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ProgramError
from ..program import Program
from .graph import ALIASES, FORMAT, VERSION, canonical, read_kernel
from .kernel import Bindings, graph_to_program

__all__ = ["CIRCUIT_FORMAT", "circuit_to_kernel", "kernel_to_circuit", "circuit_to_program"]

CIRCUIT_FORMAT = "atlas-web-circuit"
#: kernel operation -> its gate spelling
_SHORT = {long: short for short, long in ALIASES.items() if short not in ("select", "swish")}


def _load(obj: Any, what: str) -> dict:
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError as error:
            raise ProgramError(f"{what}: not JSON ({error})") from None
    if not isinstance(obj, dict):
        raise ProgramError(f"{what}: expected an object, got {type(obj).__name__}")
    return obj


def circuit_to_kernel(circuit: Any) -> dict:
    """The JSON kernel of ``circuit`` (a dict or JSON text): wires become inputs, gates ops (names
    spelled as the kernel form spells them). Raises ProgramError for a malformed circuit."""
    circuit = _load(circuit, "circuit")
    extra = sorted(set(circuit) - {"format", "version", "name", "wires", "gates", "outputs"})
    missing = [k for k in ("wires", "gates", "outputs") if k not in circuit]
    if extra or missing:
        problems = ([f"unknown field(s) {', '.join(map(repr, extra))}"] if extra else []) + (
            [f"missing {', '.join(map(repr, missing))}"] if missing else [])
        raise ProgramError(f"circuit: {'; '.join(problems)}")
    if circuit.get("format", CIRCUIT_FORMAT) != CIRCUIT_FORMAT or circuit.get("version", VERSION) != VERSION:
        raise ProgramError(f"circuit: format must be {CIRCUIT_FORMAT!r} version {VERSION}")
    wires = circuit["wires"]
    if not isinstance(wires, dict):
        raise ProgramError(f"circuit: wires must be an object of name -> {{shape, dtype}}, got {type(wires).__name__}")
    inputs = []
    for name, wire in wires.items():
        if not isinstance(wire, dict):
            raise ProgramError(f"wires[{name!r}]: expected an object with shape and dtype, got {wire!r}")
        inputs.append({"name": name, **wire})
    gates = circuit["gates"]
    if not isinstance(gates, list):
        raise ProgramError(f"circuit: gates must be a list, got {type(gates).__name__}")
    ops = [{**gate, "op": canonical(gate["op"], gate.get("in"))}
           if isinstance(gate, dict) and isinstance(gate.get("op"), str) else gate for gate in gates]
    kernel = {"format": FORMAT, "version": VERSION, "inputs": inputs, "ops": ops, "outputs": circuit["outputs"]}
    if "name" in circuit:
        kernel["name"] = circuit["name"]
    return kernel


def kernel_to_circuit(kernel: Any) -> dict:
    """The circuit of ``kernel`` (checked first: ProgramError as ``json_to_program`` raises): inputs become
    typed wires, ops gates with their short names."""
    kernel = _load(kernel, "kernel")
    read_kernel(kernel)
    wires = {}
    for entry in kernel["inputs"]:
        wires[entry["name"]] = {"shape": list(entry["shape"]), "dtype": entry["dtype"]}
    gates = []
    for op in kernel["ops"]:
        name = canonical(op["op"], op["in"])
        gates.append({**op, "op": _SHORT.get(name, name)})
    circuit = {"format": CIRCUIT_FORMAT, "version": VERSION, "wires": wires, "gates": gates,
               "outputs": list(kernel["outputs"])}
    if "name" in kernel:
        circuit["name"] = kernel["name"]
    return circuit


def circuit_to_program(circuit: Any) -> tuple[Program, Bindings]:
    """``circuit`` (a dict or JSON text) as one Atlas program and its bindings (``json_to_program`` of its
    kernel). Raises ProgramError naming the gate, wire and shapes: an unknown op, a wire used before it
    is driven or driven twice, shapes that do not broadcast."""
    graph = read_kernel(circuit_to_kernel(circuit), ("gates", "wire", "driven"))
    return graph_to_program(graph)
