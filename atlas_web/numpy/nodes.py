"""Array operations as nodes: what a generated program needs to know about one operation (its shapes,
types, strides and attributes) and nothing about the buffers it runs on. A node is frozen and hashable:
it is the key of the generated program's cache, so a warm operation only launches; a later ``jit`` can
fuse chains of them. Buffers, offsets and scalar values reach the program as preset registers
(``ExecutionParams.registers``) in the order ``Node.presets`` lists. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.types import Type

__all__ = ["Operand", "MapNode", "ReduceNode", "DotNode", "GemmNode", "CoopMapNode", "CoopReduceNode", "Preset",
           "Leaf", "Term", "FusedMapNode", "FusedReduceNode", "KernelNode", "GemmEpilogueNode"]


@dataclass(frozen=True, slots=True)
class Operand:
    """How a per-lane program reads one input: its stored type, and its element strides over the
    iteration dimensions, or ``None`` for a Python scalar given as a preset register of the computing
    type. ``based``: a base element offset (a preset) is added (views made by slicing)."""

    dtype: Type
    strides: tuple[int, ...] | None
    based: bool = False


#: a preset register's meaning: ("handle", operand index), ("base", operand index), ("scalar", operand index)
Preset = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MapNode:
    """A per-lane elementwise operation: lane i computes element i of the iteration ``shape`` (row-major),
    reading each operand at its strides, computing ``op`` (a row of ops_table.OPS) in ``compute`` and
    storing ``out`` at ``out_strides`` (plus a base offset when ``out_based``)."""

    op: str
    shape: tuple[int, ...]
    inputs: tuple[Operand, ...]
    compute: Type
    out: Type
    out_strides: tuple[int, ...]
    out_based: bool = False


@dataclass(frozen=True, slots=True)
class ReduceNode:
    """A per-lane reduction: lane i computes output element i (over the kept dimensions ``shape``, whose
    input strides are ``strides``) by folding the input over the reduced dimensions ``reduce_shape`` at
    ``reduce_strides`` in ``acc``, storing ``out`` contiguously. ``op``: sum, prod, max, min, argmax,
    argmin."""

    op: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    reduce_shape: tuple[int, ...]
    reduce_strides: tuple[int, ...]
    dtype: Type
    acc: Type
    out: Type


@dataclass(frozen=True, slots=True)
class DotNode:
    """A per-lane contraction (matmul): lane i computes output element i of ``shape`` (row-major,
    contiguous) as the sum over ``k`` of ``a[...] * b[...]``, reading ``a`` and ``b`` at their strides over
    ``shape`` (``a_strides``, ``b_strides``) and along k (``a_k``, ``b_k``), in ``ty``."""

    shape: tuple[int, ...]
    k: int
    a_strides: tuple[int, ...]
    b_strides: tuple[int, ...]
    a_k: int
    b_k: int
    ty: Type


@dataclass(frozen=True, slots=True)
class GemmNode:
    """The GEMM instruction (``batch`` 1) or BatchedGEMM over packed row-major operands: ``batch`` items of
    an m x k A times a k x n B into C (alpha 1, beta 0)."""

    batch: int
    m: int
    n: int
    k: int
    ty: Type


@dataclass(frozen=True, slots=True)
class CoopMapNode:
    """A cooperative elementwise map (ParallelMap, or ParallelMapBinary for two inputs) over ``count``
    contiguous elements of ``ty``; ``op`` names a row of ops_table.OPS."""

    op: str
    count: int
    arity: int
    ty: Type


@dataclass(frozen=True, slots=True)
class CoopReduceNode:
    """A cooperative full reduction (ParallelReduce) of ``count`` contiguous elements of ``ty`` into one."""

    op: str
    count: int
    ty: Type


@dataclass(frozen=True, slots=True)
class KernelNode:
    """One kernel instruction (Softmax, LayerNorm, Attention, Conv2D, ...) over ``arrays`` input arrays and
    one output, all packed row-major: ``text`` is its assembly with ``{out}`` and ``{a0}``, ``{a1}``, ...
    where the output's and the inputs' addresses go (the shapes are immediates in the text)."""

    text: str
    arrays: int


# ---- fused nodes (made by jit: atlas_web/numpy/fusion.py) -----------------------------------------------

@dataclass(frozen=True, slots=True)
class Leaf:
    """An input of a fused expression, which computes the elements of one row-major array by their index
    ``e``: an array read at element ``sum(unravel(e, dims) * strides)`` (plus a base preset where
    ``based``), or a Python scalar preset of type ``dtype`` (``dims`` None)."""

    dtype: Type
    dims: tuple[int, ...] | None
    strides: tuple[int, ...] | None = None
    based: bool = False

    @property
    def identity(self) -> bool:
        """Whether the leaf's element index is ``e`` itself (read contiguously, as the result is laid out)."""
        if self.dims is None or self.based:
            return False
        expected, step = [], 1
        for n in reversed(self.dims):
            expected.append(step)
            step *= n
        return tuple(reversed(expected)) == self.strides


@dataclass(frozen=True, slots=True)
class Term:
    """One elementwise operation of a fused expression: the row ``op`` of ops_table.OPS computed in
    ``compute`` and kept as ``out`` (the type eager evaluation stores), over ``args``: a reference k below
    the number of leaves is leaf k, else term ``k - len(leaves)``."""

    op: str
    compute: Type
    out: Type
    args: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FusedMapNode:
    """Elementwise operations fused into one pass: lane ``e`` (of ``count``) evaluates ``terms`` over
    ``leaves`` and stores each of ``outputs`` (a reference, as in Term.args) at element e of its own
    contiguous buffer, in the reference's type. Launch operands: the leaves', then the outputs'."""

    count: int
    leaves: tuple[Leaf, ...]
    terms: tuple[Term, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FusedReduceNode:
    """A per-lane reduction (as ReduceNode) whose input elements are computed, not loaded: element ``e``
    of the reduced array is the reference ``value`` of ``terms`` over ``leaves`` (as FusedMapNode), of type
    ``dtype``. Launch operands: the leaves', then the output."""

    op: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    reduce_shape: tuple[int, ...]
    reduce_strides: tuple[int, ...]
    leaves: tuple[Leaf, ...]
    terms: tuple[Term, ...]
    value: int
    dtype: Type
    acc: Type
    out: Type


@dataclass(frozen=True, slots=True)
class GemmEpilogueNode:
    """A GEMM and the elementwise pass that consumes its result, in one program (one launch): the GEMM
    instruction writes C, then lane ``e`` of ``epilogue`` (a FusedMapNode over C's ``batch*m*n`` elements)
    evaluates its terms, leaf ``c_leaf`` being C read at element e, and stores its outputs. Launch
    operands: A, B, then the epilogue's leaves' (C among them, at ``2 + c_leaf``), then its outputs'."""

    gemm: GemmNode
    epilogue: FusedMapNode
    c_leaf: int
