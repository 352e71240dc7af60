"""``json_to_program``: a JSON kernel (atlas_web/translate/graph.py, docs/translate.md) as one Atlas
program, and the ``Bindings`` that say which preset register holds which input or output buffer.

The program is atlas_web.numpy's fused per-lane pass (atlas_web/numpy/codegen_fused.py): lane ``e``
computes element ``e`` of the outputs (all of one shape), each operation as eager ``atlas_web.numpy``
computes it (the same conversions, the same instruction, the same stored type), reading each input at its
broadcast strides; numbers are preset registers. So a kernel gives the bits of the same operations run
with ``atlas_web.numpy`` (eagerly, per lane) on the same backend. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .. import numpy as anp
from ..backend import Backend
from ..errors import ArrayError, ProgramError
from ..isa.registers import Register
from ..isa.types import Type
from ..launch import ExecutionParams, LaunchConfig
from ..numpy.array import Array
from ..numpy.codegen import Kernel
from ..numpy.nodes import FusedMapNode, FusedReduceNode, Leaf, Term
from ..numpy.runtime import kernel_for
from ..numpy.shapes import broadcast_strides, coalesce, row_major, size_of
from ..program import Program
from .graph import REDUCTIONS, Graph, Value, read_kernel

__all__ = ["Binding", "Bindings", "json_to_program", "graph_to_program"]


@dataclass(frozen=True)
class Binding:
    """Preset register ``register`` (u32) holds the handle of value ``name``'s buffer: ``shape`` elements
    of ``dtype``, contiguous row-major (a boolean array stores U8 0/1)."""

    name: str
    register: int
    shape: tuple[int, ...]
    dtype: Type
    is_bool: bool = False


@dataclass(frozen=True)
class Bindings:
    """How to launch a kernel's program: its inputs' and outputs' registers, the number presets
    (register -> (Type, value)) and the launch configuration."""

    inputs: tuple[Binding, ...]
    outputs: tuple[Binding, ...]
    constants: tuple[tuple[int, Type, Any], ...]
    config: LaunchConfig

    def params(self, handles: Mapping[str, int]) -> ExecutionParams:
        """The launch parameters with ``handles[name]`` the buffer of each input and output. Raises
        ProgramError naming a missing one."""
        registers = {Register(r): (ty, value) for r, ty, value in self.constants}
        for b in (*self.inputs, *self.outputs):
            if b.name not in handles:
                raise ProgramError(f"bindings: no buffer for {b.name!r}")
            registers[Register(b.register)] = (Type.U32, int(handles[b.name]))
        return ExecutionParams(self.config, registers)

    def run(self, program: Program, device: Backend, inputs: Mapping[str, Any]) -> dict[str, Array]:
        """Launch ``program`` on ``device`` over ``inputs`` (name -> Array, NumPy array, array.array or
        lists; converted to the declared dtype, never reinterpreted) into new arrays, returned by output
        name. Raises ProgramError for a missing or misshapen input; AtlasTrap, ExecutionFailed or
        UnsupportedOperation from the launch."""
        arrays = {}
        for b in self.inputs:
            if b.name not in inputs:
                names = ", ".join(x.name for x in self.inputs)
                raise ProgramError(f"run: input {b.name!r} is missing (inputs: {names})")
            a = anp.asarray(inputs[b.name], dtype="bool" if b.is_bool else b.dtype, device=device)
            if a.shape != b.shape:
                raise ProgramError(f"run: input {b.name!r} has shape {a.shape}, the kernel declares {b.shape}")
            arrays[b.name] = a
        for b in self.outputs:
            arrays.setdefault(b.name, Array.empty(device, b.shape, b.dtype, b.is_bool))
        device.execute_program_with_params(program, self.params({k: a.buffer.handle for k, a in arrays.items()}))
        return {b.name: arrays[b.name] for b in self.outputs}


def json_to_program(kernel: Any) -> tuple[Program, Bindings]:
    """``kernel`` (a dict or JSON text, docs/translate.md) as one Atlas program and its bindings. Raises
    ProgramError naming the operation, value and shapes that do not fit."""
    return graph_to_program(read_kernel(kernel))


def graph_to_program(graph: Graph) -> tuple[Program, Bindings]:
    """The program and bindings of a checked Graph (see ``json_to_program``)."""
    reduction = _final_reduction(graph)
    shape = graph.outputs[0].shape if reduction is None else next(
        v.shape for v in (*graph.inputs, *(op.result for op in graph.ops)) if v.name == reduction.args[0])
    for v in graph.outputs[1:] if reduction is None else ():
        if v.shape != shape:
            raise ProgramError(f"outputs: {v.name!r} has shape {v.shape}, {graph.outputs[0].name!r} {shape}: "
                               "the outputs of one kernel have one shape")
    count = size_of(shape)
    if count == 0:
        raise ProgramError(f"outputs: shape {shape} has no elements")
    refs: dict[str, int] = {}
    leaves: list[Leaf] = []
    for v in graph.inputs:
        refs[v.name] = len(leaves)
        leaves.append(Leaf(v.dtype, shape, broadcast_strides(v.shape, shape)))
    numbers: dict[int, Any] = {}  # leaf index -> value
    elementwise = graph.ops if reduction is None else graph.ops[:-1]
    for op in elementwise:
        for k, a in enumerate(op.args):
            if not isinstance(a, str):
                if op.op == "where" and k == 0:
                    raise ProgramError(f"where: the condition must be an array, got {a!r}")
                numbers[len(leaves)] = float(a) if op.compute.is_float() else int(a)
                leaves.append(Leaf(op.compute, None))
    terms: list[Term] = []
    scalar = iter(sorted(numbers))
    for op in elementwise:
        args = tuple(refs[a] if isinstance(a, str) else next(scalar) for a in op.args)
        refs[op.result.name] = len(leaves) + len(terms)
        terms.append(Term(op.op, op.compute, op.result.dtype, args))
    if len(leaves) + len(graph.outputs) > 47:
        raise ProgramError(f"kernel: {len(leaves)} inputs and numbers and {len(graph.outputs)} outputs need more "
                           "than the 47 preset registers a program has")
    if reduction is None:
        node = FusedMapNode(count, tuple(leaves), tuple(terms), tuple(refs[v.name] for v in graph.outputs))
    else:
        node = _reduce_node(reduction, shape, leaves, terms, refs)
    try:
        kernel = kernel_for(node)
    except ArrayError as error:
        raise ProgramError(f"kernel: {error}") from None
    return kernel.program, _bindings(kernel, graph, leaves, numbers, graph.outputs[0].shape)


def _final_reduction(graph: Graph):
    """The graph's reduction (its last operation, whose result is the only output), or None."""
    found = [k for k, op in enumerate(graph.ops) if op.op in REDUCTIONS]
    if not found:
        return None
    last = graph.ops[-1]
    if found != [len(graph.ops) - 1] or [v.name for v in graph.outputs] != [last.result.name]:
        op = graph.ops[found[0]]
        raise ProgramError(f"ops[{found[0]}] ({op.op}): a reduction must be the last operation and its result "
                           "the only output")
    return last


def _reduce_node(op, shape: tuple[int, ...], leaves: list[Leaf], terms: list[Term], refs: dict) -> FusedReduceNode:
    """Each lane folds one output element over the reduced axes, computing the elements it reads."""
    own = row_major(shape)
    kept = [i for i in range(len(shape)) if i not in op.axes]
    dims, (strides,) = coalesce(tuple(shape[i] for i in kept), [tuple(own[i] for i in kept)])
    red_dims, (red_strides,) = coalesce(tuple(shape[i] for i in op.axes), [tuple(own[i] for i in op.axes)])
    value = refs[op.args[0]]
    dtype = leaves[value].dtype if value < len(leaves) else terms[value - len(leaves)].out
    return FusedReduceNode(op.op, dims, strides, red_dims, red_strides, tuple(leaves), tuple(terms), value, dtype,
                           op.compute, op.result.dtype)


def _bindings(kernel: Kernel, graph: Graph, leaves: list[Leaf], numbers: dict[int, Any],
              shape: tuple[int, ...]) -> Bindings:
    inputs, outputs, constants = [], [], []
    for register, (kind, k, ty) in enumerate(kernel.presets, start=1):
        if kind == "scalar":
            constants.append((register, ty, numbers[k]))
        elif kind != "handle":
            raise ProgramError(f"kernel: unexpected preset {kind!r}")  # fused leaves are never based
        elif k < len(graph.inputs):
            v: Value = graph.inputs[k]
            inputs.append(Binding(v.name, register, v.shape, v.dtype, v.is_bool))
        else:
            v = graph.outputs[k - len(leaves)]
            outputs.append(Binding(v.name, register, shape, v.dtype, v.is_bool))
    return Bindings(tuple(inputs), tuple(outputs), tuple(constants), kernel.config)
