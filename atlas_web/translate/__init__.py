"""``atlas_web.translate``: JSON kernels and circuits as Atlas programs (the seed's JsonToIsa and
CircuitToIsa). See docs/translate.md.

    program, bindings = json_to_program({"inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
                                         "ops": [{"op": "relu", "in": ["x"], "out": "y"}], "outputs": ["y"]})
    y = bindings.run(program, backend, {"x": [1, -2, 3, -4]})["y"]
"""

from __future__ import annotations

from .circuit import circuit_to_kernel, circuit_to_program, kernel_to_circuit
from .export import jit_to_kernel
from .function import kernel_function
from .graph import FORMAT, VERSION, kernel_ops, read_kernel
from .kernel import Binding, Bindings, json_to_program

__all__ = ["json_to_program", "circuit_to_program", "circuit_to_kernel", "kernel_to_circuit", "kernel_function",
           "jit_to_kernel", "read_kernel", "kernel_ops", "Binding", "Bindings", "FORMAT", "VERSION"]
