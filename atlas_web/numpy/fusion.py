"""Fusion of a traced function's launches (atlas_web/numpy/jit.py): the graph optimizer of ``jit``.

The trace is the list of launches eager evaluation would make (``Record``: a node of nodes.py, its
fallback and its operand buffers). Fusion rewrites it into fewer launches:

* **Elementwise chains.** A per-lane elementwise node (MapNode, or a cooperative map's per-lane form)
  that writes its whole result contiguously joins the *cluster* of the values it reads where it reads
  them as they are laid out (element e from element e: same count, contiguous) and the cluster is still
  open. A cluster is one FusedMapNode: one pass over memory, storing only the values something outside
  needs (a function output, a broadcast or strided read, a cooperative step, a GEMM). A cluster is
  *sealed* once a launch outside it reads one of its stored values, so its one launch (placed where its
  last member was) comes before every reader.
* **Reductions absorb their producers.** A per-lane reduction (ReduceNode) of a cluster value becomes a
  FusedReduceNode that computes each element where it would load it: the value is never stored.
* Everything else (cooperative reductions, GEMM, copies into parts of an array, power) launches as
  eager does, reading stored values; a cooperative full reduction reads its input from one fused pass.

Every term keeps eager's types and instructions, so fused values are eager's values (see
docs/arrays.md for where the instruction differs from eager's cooperative map). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .nodes import CoopMapNode, FusedMapNode, FusedReduceNode, Leaf, MapNode, ReduceNode, Term
from .shapes import row_major, size_of

__all__ = ["Record", "Step", "fuse", "MAX_TERMS", "MAX_PRESETS"]

#: the most terms one fused kernel computes, and the most preset registers it takes (r1 up to r47 are
#: presets, the generated temporaries start at r48: see codegen._FIRST_TEMP)
MAX_TERMS = 24
MAX_PRESETS = 40


@dataclass
class Record:
    """One launch of a traced function, as eager evaluation makes it (runtime.launch's arguments):
    operands are ``(buffer, base element)`` pairs or Python scalars, ``out`` the output's pair."""

    what: str
    node: object
    fallback: object
    operands: list
    out: Any


@dataclass
class Step:
    """One launch of a compiled function: ``node`` (``fallback`` where refused) over ``operands`` (as in
    Record; the output pairs of a fused node follow its leaves') and ``out`` (None for fused maps)."""

    what: str
    node: object
    fallback: object
    operands: list
    out: Any


def _key(buffer: Any) -> int:
    return id(buffer)


@dataclass(eq=False)
class _Cluster:
    """An open group of fused elementwise terms over ``count`` elements. References are tagged:
    ("leaf", i) or ("term", j)."""

    count: int
    leaves: list = field(default_factory=list)       # Leaf
    values: list = field(default_factory=list)       # the leaves' operands
    leaf_at: dict = field(default_factory=dict)      # (operand identity, Leaf) -> leaf index
    terms: list = field(default_factory=list)        # (op, compute, out, tagged args)
    produced: dict = field(default_factory=dict)     # buffer id -> (term index, buffer)
    stored: dict = field(default_factory=dict)       # buffer id -> buffer, in the order they must be stored
    members: list = field(default_factory=list)      # the records fused here
    sealed: bool = False
    last: int = -1                                   # index of the last member's record

    def presets(self) -> int:
        return sum(1 + leaf.based for leaf in self.leaves) + len(self.stored)

    def leaf(self, leaf: Leaf, value: Any) -> tuple[str, int]:
        identity = (_key(value[0]), value[1]) if isinstance(value, tuple) else (type(value), repr(value))
        k = self.leaf_at.get((identity, leaf))
        if k is None:
            k = self.leaf_at[(identity, leaf)] = len(self.leaves)
            self.leaves.append(leaf)
            self.values.append(value)
        return ("leaf", k)

    def expression(self, roots: list[tuple[str, int]]):
        """``(leaves, leaf operands, terms, root references)`` of the terms ``roots`` need, compacted."""
        needed_terms: set[int] = set()
        stack = [j for kind, j in roots if kind == "term"]
        while stack:
            j = stack.pop()
            if j in needed_terms:
                continue
            needed_terms.add(j)
            stack.extend(a for kind, a in self.terms[j][3] if kind == "term")
        order = sorted(needed_terms)
        used_leaves = sorted({a for j in order for kind, a in self.terms[j][3] if kind == "leaf"}
                             | {j for kind, j in roots if kind == "leaf"})
        leaf_new = {old: new for new, old in enumerate(used_leaves)}
        term_new = {old: len(used_leaves) + new for new, old in enumerate(order)}

        def ref(tagged: tuple[str, int]) -> int:
            kind, j = tagged
            return leaf_new[j] if kind == "leaf" else term_new[j]
        terms = tuple(Term(op, compute, out, tuple(ref(a) for a in args))
                      for op, compute, out, args in (self.terms[j] for j in order))
        return (tuple(self.leaves[i] for i in used_leaves), [self.values[i] for i in used_leaves], terms,
                [ref(r) for r in roots])


def _map_form(record: Record) -> MapNode | None:
    """The per-lane elementwise node of ``record`` where it writes its whole output buffer contiguously."""
    node = record.node
    if isinstance(node, CoopMapNode):
        node = record.fallback
    if not isinstance(node, MapNode) or node.out_based or record.out[1] != 0:
        return None
    if size_of(node.shape) * node.out.size_bytes() != record.out[0].nbytes:
        return None   # writes part of its buffer (the first part of a concatenate): others write the rest
    return node if node.out_strides == row_major(node.shape) else None


def fuse(records: list[Record], outputs: list[Any]) -> list[Step]:
    """The launches computing ``records``' effects on the buffers ``outputs`` (and on every buffer a
    launch outside a cluster reads), fused as the module says."""
    clusters: list[_Cluster] = []
    owner: dict[int, _Cluster] = {}                  # buffer id -> the cluster computing it
    placed: list[tuple[int, Any]] = []               # (record index, Step or cluster)

    def store(buffer: Any) -> None:
        cluster = owner.get(_key(buffer))
        if cluster is not None:
            cluster.stored.setdefault(_key(buffer), buffer)
            cluster.sealed = True

    for index, record in enumerate(records):
        node = _map_form(record)
        if node is not None:
            _add_member(index, record, node, clusters, owner, store)
            continue
        if isinstance(record.node, ReduceNode) and _key(record.operands[0][0]) in owner:
            placed.append((index, _absorbed(record, owner[_key(record.operands[0][0])])))
            continue
        for value in record.operands:
            if isinstance(value, tuple):
                store(value[0])
        placed.append((index, Step(record.what, record.node, record.fallback, record.operands, record.out)))
    for buffer in outputs:
        cluster = owner.get(_key(buffer))
        if cluster is not None:
            cluster.stored.setdefault(_key(buffer), buffer)
    for cluster in clusters:
        if cluster.stored:
            placed.append((cluster.last, _cluster_step(cluster)))
    placed.sort(key=lambda item: item[0])
    return [step for _, step in placed]


def _add_member(index: int, record: Record, node: MapNode, clusters: list[_Cluster], owner: dict, store) -> None:
    """Fuse the elementwise ``record`` (per-lane form ``node``) into the open cluster it reads as laid
    out, or start a cluster."""
    count = size_of(node.shape)
    contiguous = row_major(node.shape)
    reads = []   # per operand: the cluster it reads as laid out, or None
    for operand, value in zip(node.inputs, record.operands):
        cluster = owner.get(_key(value[0])) if isinstance(value, tuple) else None
        laid_out = (cluster is not None and not cluster.sealed and cluster.count == count
                    and operand.strides == contiguous and not operand.based and value[1] == 0)
        reads.append(cluster if laid_out else None)
    candidates = [c for c in reads if c is not None]
    target = candidates[0] if candidates else None
    if target is not None:
        other_reads = any(isinstance(v, tuple) and owner.get(_key(v[0])) is target and r is not target
                          for v, r in zip(record.operands, reads))
        if other_reads or len(target.terms) >= MAX_TERMS or target.presets() + len(node.inputs) + 2 > MAX_PRESETS:
            target = None
    if target is None:
        target = _Cluster(count)
        clusters.append(target)
    args = []
    for operand, value, read in zip(node.inputs, record.operands, reads):
        if read is target:
            args.append(("term", target.produced[_key(value[0])][0]))
            continue
        source = owner.get(_key(value[0])) if isinstance(value, tuple) else None
        if source is not None and _key(value[0]) not in source.stored:
            term = source.produced[_key(value[0])][0]
            if _reads_as_laid_out(source, term):
                # recompute the value here, its leaves read as this operand reads it (broadcast, strided)
                args.append(_inline(target, source, term, node.shape, operand, value[1], {}))
                continue
        if isinstance(value, tuple):
            store(value[0])
            args.append(target.leaf(Leaf(operand.dtype, node.shape, operand.strides, operand.based), value))
        else:
            args.append(target.leaf(Leaf(node.compute, None), value))
    target.terms.append((node.op, node.compute, node.out, tuple(args)))
    out = record.out[0]
    target.produced[_key(out)] = (len(target.terms) - 1, out)
    target.members.append(record)
    target.last = index
    owner[_key(out)] = target


def _reads_as_laid_out(cluster: _Cluster, term: int) -> bool:
    """Whether every leaf array the term reads is read as the result is laid out (so the term's element
    e needs the leaves' elements e only), and the term is small enough to compute again."""
    stack, seen = [term], set()
    while stack:
        j = stack.pop()
        if j in seen:
            continue
        seen.add(j)
        for kind, a in cluster.terms[j][3]:
            if kind == "term":
                stack.append(a)
            elif cluster.leaves[a].dims is not None and not (cluster.leaves[a].identity
                                                             and cluster.values[a][1] == 0):
                return False
    return len(seen) <= MAX_TERMS // 4


def _inline(target: _Cluster, source: _Cluster, term: int, dims: tuple[int, ...], operand, base: int,
            done: dict) -> tuple[str, int]:
    """Copy ``source``'s term (and what it reads) into ``target``, each leaf array read at ``operand``'s
    strides over ``dims`` from element ``base``: element e of the term is element e of its leaves."""
    if term in done:
        return done[term]
    op, compute, out, args = source.terms[term]
    copied = []
    for kind, a in args:
        if kind == "term":
            copied.append(_inline(target, source, a, dims, operand, base, done))
            continue
        leaf, value = source.leaves[a], source.values[a]
        if leaf.dims is None:
            copied.append(target.leaf(leaf, value))
        else:
            copied.append(target.leaf(Leaf(leaf.dtype, dims, operand.strides, operand.based), (value[0], base)))
    target.terms.append((op, compute, out, tuple(copied)))
    done[term] = ("term", len(target.terms) - 1)
    return done[term]


def _absorbed(record: Record, cluster: _Cluster) -> Step:
    """The reduction ``record`` computing its input from ``cluster``'s terms instead of loading it."""
    node: ReduceNode = record.node
    term, _ = cluster.produced[_key(record.operands[0][0])]
    leaves, values, terms, (value,) = cluster.expression([("term", term)])
    fused = FusedReduceNode(node.op, node.shape, node.strides, node.reduce_shape, node.reduce_strides, leaves,
                            terms, value, node.dtype, node.acc, node.out)
    ops = "+".join(t.op for t in terms)
    return Step(f"{record.what} of {ops}", fused, None, [*values, record.out], None)


def _cluster_step(cluster: _Cluster) -> Step:
    """The one launch of ``cluster`` (its original launch where fusion changed nothing)."""
    if len(cluster.terms) == 1 and len(cluster.stored) == 1:   # one member, nothing inlined into it
        record = cluster.members[0]
        return Step(record.what, record.node, record.fallback, record.operands, record.out)
    roots = [("term", cluster.produced[k][0]) for k in cluster.stored]
    leaves, values, terms, refs = cluster.expression(roots)
    node = FusedMapNode(cluster.count, leaves, terms, tuple(refs))
    what = f"fused {'+'.join(t.op for t in terms)} over {cluster.count} elements"
    return Step(what, node, None, [*values, *((b, 0) for b in cluster.stored.values())], None)
