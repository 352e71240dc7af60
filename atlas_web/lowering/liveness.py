"""Virtual registers and their liveness over the lane graph.

Virtual registers
    A register has no type of its own: each definition gives it one, and the
    verifier types every register operand (``ProgramInfo.def_types`` for
    writes, ``use_types`` for reads) so that a read sees one type up to integer
    signedness. Signedness is a property of instructions (``add.i32`` and
    ``add.u32`` make the same bits), not of storage, so a value is *stored* in
    its :func:`storage_type`: the unsigned integer type of its width, or the
    float type itself. A :class:`VirtualRegister` is one (register, storage
    type) pair, or one predicate; a code generator allocates one local per
    virtual register. A read and the definitions reaching it always name the
    same virtual register (same register, same storage type), so no copies
    are needed, and the same register used as ``f32`` here and ``u64`` there
    gets two virtual registers, as the reference keeps one storage bank per
    type family.

    Special registers (r243 … r255) are read-only and recomputed from the
    lane's position: they get virtual registers (``is_special``) but are never
    live, spilled or reloaded.

Liveness
    Backward dataflow over the lane graph with bit sets (Python ints, bit k for
    virtual register k). A node's instructions are its run followed by its exit
    instruction (BRA's predicate and LOOP's count are read there, LOOP's count
    written; a cooperative instruction's operands are read and written at its
    SUSPEND). A SUSPEND node's successor is its resume point's node, so live
    sets flow through barriers and cooperative steps (also around loops that
    contain them). Every node that ends the lane (EXIT, RET with nothing
    pending, the shared END node) uses the ``end_uses`` given at its end (see
    ``plan.py``: what a lane stores when it ends).

Nothing here copies the program; standard library only.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

from ..isa.registers import FIRST_SPECIAL_REGISTER, Predicate, Register
from ..isa.types import Type, TypeClass
from ..verify_operands import PREDICATE_BASE, operand_accesses
from .stages import ExitKind, LaneGraph

__all__ = [
    "VirtualRegister", "RegisterAssignment", "Liveness", "storage_type", "assign_virtual_registers",
    "analyse_liveness", "bits_of",
]

#: type -> the type its values are stored in (integers: the unsigned type of the same width)
_STORAGE: dict[Type, Type] = {
    t: (t if t.family is not TypeClass.SIGNED else
        next(u for u in Type if u.family is TypeClass.UNSIGNED and u.bits == t.bits))
    for t in Type
}


def storage_type(ty: Type) -> Type:
    """The type a value of ``ty`` is stored in: ``ty`` for floats and unsigned integers, the unsigned
    integer type of the same width for signed ones (``I32 -> U32``)."""
    return _STORAGE[ty]


@dataclass(frozen=True, slots=True)
class VirtualRegister:
    """One local of a lane: ``register`` (a Register or a Predicate) holding values stored as
    ``type`` (None for a predicate). ``id`` numbers the virtual registers of a program densely,
    in (register, type code) order, registers before predicates."""

    id: int
    register: Register | Predicate
    type: Type | None

    @property
    def is_predicate(self) -> bool:
        return self.type is None

    @property
    def is_special(self) -> bool:
        """True for the read-only special registers (recomputed, never spilled)."""
        return self.type is not None and self.register.index >= FIRST_SPECIAL_REGISTER

    def __str__(self) -> str:
        return str(self.register) if self.type is None else f"{self.register}:{self.type.suffix}"


def bits_of(vregs: Iterable[VirtualRegister]) -> int:
    """The bit set of ``vregs`` (bit ``v.id`` for each)."""
    bits = 0
    for v in vregs:
        bits |= 1 << v.id
    return bits


@dataclass(frozen=True)
class RegisterAssignment:
    """The virtual registers of a program and which one each operand names.

    ``reads[(i, path)]`` / ``writes[(i, path)]``: the virtual register operand ``path`` of
    instruction ``i`` reads / writes (paths as in ProgramInfo: ``"lhs"``, ``"src.base"``,
    ``"pred"``; LOOP's ``"count"`` is in both). ``read_bits[i]`` / ``write_bits[i]``: the bit sets
    of instruction ``i``'s reads and writes, special registers left out.
    """

    vregs: tuple[VirtualRegister, ...]
    reads: Mapping[tuple[int, str], VirtualRegister]
    writes: Mapping[tuple[int, str], VirtualRegister]
    read_bits: tuple[int, ...]
    write_bits: tuple[int, ...]

    def vregs_of(self, bits: int) -> tuple[VirtualRegister, ...]:
        """The virtual registers of bit set ``bits``, by id."""
        out = []
        vregs = self.vregs
        while bits:
            low = bits & -bits
            out.append(vregs[low.bit_length() - 1])
            bits ^= low
        return tuple(out)

    def find(self, register: Register | Predicate, ty: Type | None = None) -> VirtualRegister | None:
        """The virtual register of ``register`` stored as ``storage_type(ty)`` (None for a predicate),
        or None when the program has none."""
        storage = None if ty is None else storage_type(ty)
        for v in self.vregs:
            if v.register == register and v.type is storage:
                return v
        return None


def _location_register(location: int) -> Register | Predicate:
    return Predicate(location - PREDICATE_BASE) if location >= PREDICATE_BASE else Register(location)


#: type -> the type code of its storage type (keys of virtual registers: ``location << 8 | code``)
_STORAGE_CODE: dict[Type, int] = {t: s.code for t, s in _STORAGE.items()}


def assign_virtual_registers(info) -> RegisterAssignment:
    """The virtual registers of the verified program of ``info`` (a ProgramInfo), from its operand
    types. Raises KeyError only for a ProgramInfo that lacks the type of a register operand
    (not one ``verify`` made)."""
    use_types, def_types = info.use_types, info.def_types
    accesses: list[tuple[int, str, int, bool]] = []  # (instruction, path, key, is a write)
    append = accesses.append
    for index, instr in enumerate(info.program.instructions):
        reads, writes = operand_accesses(instr)
        for acc in reads:
            loc = acc.location
            append((index, acc.path, loc << 8 if loc >= PREDICATE_BASE else
                    loc << 8 | _STORAGE_CODE[use_types[(index, acc.path)]], False))
        for acc in writes:
            loc = acc.location
            append((index, acc.path, loc << 8 if loc >= PREDICATE_BASE else
                    loc << 8 | _STORAGE_CODE[def_types[(index, acc.path)]], True))
    ordered = sorted({key for _, _, key, _ in accesses})  # registers (by type code), then predicates
    vregs = tuple(VirtualRegister(n, _location_register(key >> 8),
                                  None if key >> 8 >= PREDICATE_BASE else Type.from_code(key & 0xFF))
                  for n, key in enumerate(ordered))
    by_key = {key: vregs[n] for n, key in enumerate(ordered)}
    counted = {key: (0 if vregs[n].is_special else 1 << n) for n, key in enumerate(ordered)}
    read_map: dict[tuple[int, str], VirtualRegister] = {}
    write_map: dict[tuple[int, str], VirtualRegister] = {}
    size = len(info.program)
    read_bits, write_bits = [0] * size, [0] * size
    for index, path, key, is_write in accesses:
        if is_write:
            write_map[(index, path)] = by_key[key]
            write_bits[index] |= counted[key]
        else:
            read_map[(index, path)] = by_key[key]
            read_bits[index] |= counted[key]
    return RegisterAssignment(vregs, MappingProxyType(read_map), MappingProxyType(write_map),
                              tuple(read_bits), tuple(write_bits))


@dataclass(frozen=True)
class Liveness:
    """Live virtual registers (bit sets) at the start (``live_in``) and end (``live_out``) of each
    lane-graph node; at the end of a SUSPEND node that is after its cut instruction, i.e. what the
    resume point needs. ``end_uses``: the set every lane-ending node uses at its end."""

    registers: RegisterAssignment
    live_in: tuple[int, ...]
    live_out: tuple[int, ...]
    end_uses: int

    def live_at_entry(self, node: int) -> tuple[VirtualRegister, ...]:
        """The virtual registers live when ``node`` starts."""
        return self.registers.vregs_of(self.live_in[node])


def _node_transfer(graph: LaneGraph, registers: RegisterAssignment) -> tuple[list[int], list[int]]:
    """Per node ``(gen, kill)``: live_in = gen | (live_out & ~kill)."""
    reads, writes = registers.read_bits, registers.write_bits
    gens, kills = [], []
    for node in graph.nodes:
        gen = kill = 0
        if node.exit_index is not None:
            gen, kill = reads[node.exit_index], writes[node.exit_index]
        for i in range(node.end - 1, node.start - 1, -1):
            w = writes[i]
            gen = (gen & ~w) | reads[i]
            kill |= w
        gens.append(gen)
        kills.append(kill)
    return gens, kills


def analyse_liveness(graph: LaneGraph, registers: RegisterAssignment, end_uses: int = 0) -> Liveness:
    """Live virtual registers at every node of ``graph``; nodes that end the lane use ``end_uses``."""
    nodes = graph.nodes
    gens, kills = _node_transfer(graph, registers)
    resume_nodes = [rp.node for rp in graph.resume_points]
    successors: list[tuple[int, ...]] = []
    predecessors: list[list[int]] = [[] for _ in nodes]
    for node in nodes:
        succ = (resume_nodes[node.resume],) if node.kind is ExitKind.SUSPEND else node.successors  # type: ignore[index]
        successors.append(succ)
        for s in succ:
            predecessors[s].append(node.id)
    live_out = [end_uses if node.kind is ExitKind.END else 0 for node in nodes]
    live_in = [gens[n] | (live_out[n] & ~kills[n]) for n in range(len(nodes))]
    pending = deque(reversed(range(len(nodes))))
    queued = [True] * len(nodes)
    while pending:
        n = pending.popleft()
        queued[n] = False
        out = live_out[n]
        for s in successors[n]:
            out |= live_in[s]
        live_out[n] = out
        new = gens[n] | (out & ~kills[n])
        if new != live_in[n]:
            live_in[n] = new
            for p in predecessors[n]:
                if not queued[p]:
                    queued[p] = True
                    pending.append(p)
    return Liveness(registers, tuple(live_in), tuple(live_out), end_uses)
