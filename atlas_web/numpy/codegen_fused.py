"""Programs of the fused nodes that ``jit`` makes (atlas_web/numpy/nodes.py: FusedMapNode, FusedReduceNode).

A fused expression computes element ``e`` of a row-major array from its leaves: a leaf read as the result
is laid out loads at ``e`` itself (no division: a contiguous chain stays straight-line code the wasm
backend runs in SIMD lane mode), any other unravels ``e`` over its own dimensions and applies its
strides. Each term is emitted as eager evaluation computes it (codegen.emit_term: the same conversions,
the same instruction, the same stored type), so a fused value has eager's bits. Standard library only.
"""

from __future__ import annotations

from ..isa.types import Type
from ..launch import LaunchConfig
from .codegen import (GENERATORS, Kernel, Emitter, convert_to, emit_fold, emit_term, fold_type, gemm_text,
                      input_presets)
from .nodes import FusedMapNode, FusedReduceNode, GemmEpilogueNode, Leaf, Term

__all__ = ["leaf_presets", "EPILOGUE_MAX"]

#: the most elements a GEMM's epilogue may cover (one lane each): every lane of a launch runs up to the GEMM and
#: resumes after it, which costs the wasm backend more per lane than a pass does (a 64x256x256 GEMM alone took
#: 1.5 ms in a 1-lane launch, 4.1 ms in a 16,384-lane one; benchmarks/jit_epilogue.py: one program wins up to
#: 1,024 elements, loses from 2,048), and lanes looping over more elements cost the reference interpreter per
#: iteration (6.7x slower at 16,384 elements by 256 lanes); larger products keep the GEMM and its pass apart
EPILOGUE_MAX = 1024


def leaf_presets(leaves: tuple[Leaf, ...]) -> tuple[list[tuple[str, int, Type]], list[tuple[str, str | None]]]:
    """The presets of ``leaves`` (operand k is leaf k) and, per leaf, its registers: (handle or scalar,
    base or None)."""
    return input_presets([(leaf.dtype if leaf.dims is None else None, leaf.based) for leaf in leaves])


class _Expression:
    """Emits the values of one fused expression at one element index register (each value once)."""

    def __init__(self, em: Emitter, leaves: tuple[Leaf, ...], terms: tuple[Term, ...],
                 registers: list[tuple[str, str | None]], index: str) -> None:
        self.em, self.leaves, self.terms, self.registers, self.index = em, leaves, terms, registers, index
        self.values: dict[int, tuple[str, Type]] = {}
        self.scaled: dict[int, str] = {}

    def value(self, ref: int) -> tuple[str, Type]:
        """The register holding reference ``ref`` and its type."""
        found = self.values.get(ref)
        if found is None:
            found = self.values[ref] = self._leaf(ref) if ref < len(self.leaves) else self._term(ref)
        return found

    def _leaf(self, k: int) -> tuple[str, Type]:
        leaf, (reg, base) = self.leaves[k], self.registers[k]
        if leaf.dims is None:
            return reg, leaf.dtype
        em, size = self.em, leaf.dtype.size_bytes()
        if leaf.identity:
            offset = self.scaled.get(size)
            if offset is None:
                offset = self.scaled[size] = em.reg()
                em.emit(f"mul.u32 {offset}, {self.index}, {em.const(size)}")
        else:
            offset = em.offset(em.unravel(self.index, leaf.dims), leaf.strides, base, size, share=True)
        value = em.reg()
        em.emit(f"ldg.{leaf.dtype.suffix} {value}, [{reg} + {offset}]")
        return value, leaf.dtype

    def _term(self, ref: int) -> tuple[str, Type]:
        term = self.terms[ref - len(self.leaves)]
        args = [self.value(a) for a in term.args]
        return emit_term(self.em, term.op, term.compute, term.out, args), term.out


def _fused_map_body(em: Emitter, node: FusedMapNode, shift: int = 0) -> list[tuple[str, int, Type]]:
    """Emit ``node``'s guarded pass (its leaves are operands ``shift``, ``shift + 1``, ...; its outputs
    follow them); returns its presets (registers r1 upward, in order)."""
    presets, registers = leaf_presets(node.leaves)
    presets = [(kind, k + shift, ty) for kind, k, ty in presets]
    outputs = []
    for j in range(len(node.outputs)):
        presets.append(("handle", shift + len(node.leaves) + j, Type.U32))
        outputs.append(f"r{len(presets)}")
    em.guard(node.count)
    expression = _Expression(em, node.leaves, node.terms, registers, "r255")
    for handle, ref in zip(outputs, node.outputs):
        value, ty = expression.value(ref)
        em.store_lane(handle, value, ty)
    return presets


def _fused_map_kernel(node: FusedMapNode) -> Kernel:
    em = Emitter()
    presets = _fused_map_body(em, node)
    em.check_registers()
    return Kernel(em.program(), LaunchConfig.linear(node.count), tuple(presets))


def _gemm_epilogue_kernel(node: GemmEpilogueNode) -> Kernel:
    """The GEMM (cooperative: first, in uniform control flow, over its pointer presets after the
    epilogue's), then the epilogue's per-lane pass reading C by its handle."""
    body = Emitter()
    presets = _fused_map_body(body, node.epilogue, shift=2)
    pointers = [("pointer", 0, Type.U64), ("pointer", 1, Type.U64), ("pointer", 2 + node.c_leaf, Type.U64)]
    first = len(presets) + 1
    presets.extend(pointers)
    em = Emitter()
    em.emit(gemm_text(node.gemm, f"r{first + 2}", f"r{first}", f"r{first + 1}"))
    em.lines.extend(body.lines)
    body.check_registers()
    return Kernel(em.program(), LaunchConfig.linear(node.epilogue.count), tuple(presets))


def _fused_reduce_kernel(node: FusedReduceNode) -> Kernel:
    em = Emitter()
    presets, registers = leaf_presets(node.leaves)
    presets.append(("handle", len(node.leaves), Type.U32))
    out = f"r{len(presets)}"
    lanes = 1
    for n in node.shape:
        lanes *= n
    count = 1
    for n in node.reduce_shape:
        count *= n
    em.guard(lanes)
    base = em.offset(em.unravel("r255", node.shape), node.strides, None, 1)  # in elements

    def load_at(position: str) -> str:
        index = em.offset(em.unravel(position, node.reduce_shape), node.reduce_strides, base, 1)
        value, ty = _Expression(em, node.leaves, node.terms, registers, index).value(node.value)
        return convert_to(em, value, ty, node.acc)

    result = emit_fold(em, node.op, node.acc, count, load_at)
    em.store_lane(out, convert_to(em, result, fold_type(node.op, node.acc), node.out), node.out)
    em.check_registers()
    return Kernel(em.program(), LaunchConfig.linear(lanes), tuple(presets), budget=count + 16)


GENERATORS[FusedMapNode] = _fused_map_kernel
GENERATORS[FusedReduceNode] = _fused_reduce_kernel
GENERATORS[GemmEpilogueNode] = _gemm_epilogue_kernel
