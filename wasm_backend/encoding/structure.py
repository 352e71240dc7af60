"""The decoded form of a module: what ``writer.encode_module`` writes and ``reader.decode_module`` reads.

Index spaces follow WebAssembly: imported functions (tables, memories,
globals) come first, then the module's own. Constant expressions (global
initialisers, segment offsets) are tuples of ``Instruction`` without the
closing ``end``. Function bodies are kept as bytes (their instructions and
final ``end``) so that decoding and re-encoding a module gives the same bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .instructions import Instruction
from .types import ExternKind, FuncType, GlobalType, Limits, TableType, ValType

__all__ = [
    "Import", "Export", "Global", "SegmentMode", "ElementSegment", "DataSegment", "FunctionCode", "NameMap",
    "CustomSection", "Module",
]


@dataclass(frozen=True, slots=True)
class Import:
    """An import: ``desc`` is a type index (FUNC), TableType, Limits (MEMORY) or GlobalType."""

    module: str
    name: str
    kind: ExternKind
    desc: int | TableType | Limits | GlobalType


@dataclass(frozen=True, slots=True)
class Export:
    name: str
    kind: ExternKind
    index: int


@dataclass(frozen=True, slots=True)
class Global:
    type: GlobalType
    init: tuple[Instruction, ...]


class SegmentMode(enum.Enum):
    """How a segment is used: copied at instantiation (ACTIVE), on request (PASSIVE), or only declared."""

    ACTIVE = "active"
    PASSIVE = "passive"
    DECLARATIVE = "declarative"


@dataclass(frozen=True, slots=True)
class ElementSegment:
    """Function references for a table: ``table`` and ``offset`` only for ACTIVE segments."""

    mode: SegmentMode
    functions: tuple[int, ...]
    table: int = 0
    offset: tuple[Instruction, ...] | None = None


@dataclass(frozen=True, slots=True)
class DataSegment:
    """Bytes for a memory: ``memory`` and ``offset`` only for ACTIVE segments (never DECLARATIVE)."""

    mode: SegmentMode
    data: bytes
    memory: int = 0
    offset: tuple[Instruction, ...] | None = None


@dataclass(frozen=True, slots=True)
class FunctionCode:
    """A function body: ``locals`` as (count, type) runs, ``body`` its instruction bytes ending in ``end``."""

    locals: tuple[tuple[int, ValType], ...]
    body: bytes

    @property
    def local_types(self) -> tuple[ValType, ...]:
        """The declared locals one by one (parameters not included)."""
        return tuple(t for count, t in self.locals for _ in range(count))


@dataclass(slots=True)
class NameMap:
    """The ``name`` custom section: module name, function names, local names per function and global names
    (subsection 7 of the extended name section)."""

    module: str | None = None
    functions: dict[int, str] = field(default_factory=dict)
    locals: dict[int, dict[int, str]] = field(default_factory=dict)
    globals: dict[int, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.module or self.functions or self.locals or self.globals)


@dataclass(frozen=True, slots=True)
class CustomSection:
    name: str
    payload: bytes


@dataclass(slots=True)
class Module:
    """A whole module. ``functions`` holds the type index of each defined function, ``codes`` their bodies."""

    types: list[FuncType] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    functions: list[int] = field(default_factory=list)
    tables: list[TableType] = field(default_factory=list)
    memories: list[Limits] = field(default_factory=list)
    globals: list[Global] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    start: int | None = None
    elements: list[ElementSegment] = field(default_factory=list)
    data_count: int | None = None
    codes: list[FunctionCode] = field(default_factory=list)
    data: list[DataSegment] = field(default_factory=list)
    names: NameMap = field(default_factory=NameMap)
    custom: list[CustomSection] = field(default_factory=list)

    def imported(self, kind: ExternKind) -> list[Import]:
        """The imports of one kind, in index order."""
        return [imp for imp in self.imports if imp.kind == kind]

    def function_type(self, func_index: int) -> FuncType:
        """The type of function ``func_index`` (imported or defined); raises IndexError."""
        imported = self.imported(ExternKind.FUNC)
        if func_index < len(imported):
            return self.types[imported[func_index].desc]  # type: ignore[index]
        return self.types[self.functions[func_index - len(imported)]]
