"""Programs and the ProgramBuilder.

A Program is an immutable sequence of instructions plus labels (name ->
instruction index; a label may sit at ``len(instructions)``, the end). It
converts to and from text assembly (``atlas_web.asm``), versioned bytecode
(``atlas_web.bytecode``) and JSON (``atlas_web.jsonform``); every round trip is
exact. ``digest()`` is BLAKE2b of the bytecode (standard library, so it works
under Pyodide too).
"""

from __future__ import annotations

import hashlib
from types import MappingProxyType
from typing import Iterable, Mapping

from .errors import ProgramError
from .isa.instructions import Instruction
from .isa.registers import Label, is_label_name

__all__ = ["Program", "ProgramBuilder"]


class Program:
    """An immutable Atlas program: ``instructions`` and ``labels`` (name -> index).

    The constructor checks structure only (instruction objects, label names and
    positions); ``verify()`` checks semantics. Raises ProgramError.
    """

    __slots__ = ("_instructions", "_labels", "_digest", "_bytes")

    def __init__(self, instructions: Iterable[Instruction] = (), labels: Mapping[str, int] | None = None) -> None:
        try:
            instrs = tuple(instructions)
        except TypeError:
            raise ProgramError(f"instructions must be an iterable of instructions, got "
                               f"{type(instructions).__name__}") from None
        for i, ins in enumerate(instrs):
            if not isinstance(ins, Instruction):
                raise ProgramError(f"not an instruction: {ins!r}", index=i)
        if labels is not None and not isinstance(labels, Mapping):
            raise ProgramError(f"labels must map label names to instruction indices, got {type(labels).__name__}")
        lab: dict[str, int] = {}
        for name, pos in (labels or {}).items():
            if isinstance(name, Label):
                name = name.name
            if not is_label_name(name):
                raise ProgramError(f"invalid label name {name!r}")
            if not isinstance(pos, int) or isinstance(pos, bool) or not 0 <= pos <= len(instrs):
                raise ProgramError(f"label {name!r} points at {pos!r}, outside 0..{len(instrs)}")
            lab[name] = pos
        self._instructions = instrs
        self._labels = MappingProxyType(lab)
        self._digest: str | None = None
        self._bytes: bytes | None = None

    @property
    def instructions(self) -> tuple[Instruction, ...]:
        """The instructions, in order (an immutable tuple, not a copy)."""
        return self._instructions

    @property
    def labels(self) -> Mapping[str, int]:
        """Label name -> instruction index (read-only)."""
        return self._labels

    def __len__(self) -> int:
        return len(self._instructions)

    def __iter__(self):
        return iter(self._instructions)

    def __getitem__(self, index: int) -> Instruction:
        return self._instructions[index]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        return self._instructions == other._instructions and dict(self._labels) == dict(other._labels)

    def __hash__(self) -> int:
        return hash(self.digest())

    def __repr__(self) -> str:
        return f"<Program {len(self._instructions)} instructions, {len(self._labels)} labels, {self.digest()[:12]}>"

    def target(self, label: Label | str) -> int:
        """The instruction index of ``label``; raises ProgramError when it is not defined."""
        name = label.name if isinstance(label, Label) else label
        try:
            return self._labels[name]
        except KeyError:
            raise ProgramError(f"undefined label @{name}") from None

    def labels_at(self, index: int) -> list[str]:
        """Names of the labels at ``index``, sorted."""
        return sorted(n for n, p in self._labels.items() if p == index)

    # ---- forms ----------------------------------------------------------------
    def to_text(self) -> str:
        """Text assembly (see atlas_web.asm); ``parse_program`` reads it back exactly."""
        from .asm import format_program
        return format_program(self)

    @classmethod
    def from_text(cls, text: str) -> "Program":
        """Parse text assembly; raises ProgramError pointing at the line."""
        from .asm import parse_program
        return parse_program(text)

    def to_bytes(self) -> bytes:
        """Versioned binary bytecode (see atlas_web.bytecode)."""
        if self._bytes is None:
            from .bytecode import encode_program
            self._bytes = encode_program(self)
        return self._bytes

    @classmethod
    def from_bytes(cls, data: bytes) -> "Program":
        """Decode bytecode; raises ProgramError (an unknown version names the version)."""
        from .bytecode import decode_program
        return decode_program(data)

    def to_json(self) -> str:
        """JSON form (see atlas_web.jsonform)."""
        from .jsonform import program_to_json
        return program_to_json(self)

    @classmethod
    def from_json(cls, text: str) -> "Program":
        """Read the JSON form; raises ProgramError."""
        from .jsonform import program_from_json
        return program_from_json(text)

    def digest(self) -> str:
        """Hex BLAKE2b-256 of the bytecode: equal programs have equal digests."""
        if self._digest is None:
            self._digest = hashlib.blake2b(self.to_bytes(), digest_size=32).hexdigest()
        return self._digest

    def optimize(self, level: int = 1, **kwargs) -> "Program":
        """This program optimized at ``level`` (1 or 2; 0: itself) by ``atlas_web.opt.ProgramOptimizer``:
        the same results bit for bit and the same traps, in fewer or cheaper instructions (keyword
        arguments go to the optimizer: ``target``, ``passes``). For the source map use
        ``ProgramOptimizer(level).optimize(program)``. Raises ProgramError (does not verify)."""
        from .opt import ProgramOptimizer
        return ProgramOptimizer(level, **kwargs).optimize(self).program

    def verify(self, **kwargs):
        """Run the verifier (atlas_web.verify.verify); returns its ProgramInfo, raises ProgramError."""
        from .verify import verify
        return verify(self, **kwargs)


class ProgramBuilder:
    """Builds a Program one instruction at a time.

    ``add`` returns the builder so calls chain; ``label()`` places a label at
    the next instruction; ``new_label()`` + ``bind()`` allow forward labels;
    ``build()`` verifies and returns the Program (raises ProgramError).
    """

    def __init__(self) -> None:
        self._instructions: list[Instruction] = []
        self._labels: dict[str, int] = {}
        self._counter = 0

    def add(self, instruction: Instruction) -> "ProgramBuilder":
        """Append ``instruction``; raises ProgramError when it is not an instruction."""
        if not isinstance(instruction, Instruction):
            raise ProgramError(f"ProgramBuilder.add takes an instruction, got {instruction!r}",
                               index=len(self._instructions))
        self._instructions.append(instruction)
        return self

    def extend(self, instructions: Iterable[Instruction]) -> "ProgramBuilder":
        """Append each of ``instructions``; returns the builder. Raises ProgramError as ``add``."""
        for ins in instructions:
            self.add(ins)
        return self

    def new_label(self, name: str | None = None) -> Label:
        """A fresh label, not yet placed (``bind`` places it)."""
        if name is None:
            while f"L{self._counter}" in self._labels:
                self._counter += 1
            name = f"L{self._counter}"
            self._counter += 1
        return Label(name)

    def bind(self, label: Label | str) -> Label:
        """Place ``label`` at the next instruction; raises ProgramError if it is already placed."""
        lab = label if isinstance(label, Label) else Label(label)
        if lab.name in self._labels:
            raise ProgramError(f"duplicate label @{lab.name}", index=len(self._instructions))
        self._labels[lab.name] = len(self._instructions)
        return lab

    def label(self, name: str | None = None) -> Label:
        """Create a label and place it at the next instruction."""
        return self.bind(self.new_label(name))

    def __len__(self) -> int:
        return len(self._instructions)

    def build(self, *, verify: bool = True) -> Program:
        """The Program; verified unless ``verify=False``. Raises ProgramError."""
        program = Program(self._instructions, self._labels)
        if verify:
            program.verify()
        return program
