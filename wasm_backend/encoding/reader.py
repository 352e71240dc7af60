"""Parse WebAssembly binary bytes into a ``structure.Module``.

The reader checks the framing (magic, version, section order and sizes, vector
lengths) and decodes every section this package writes, plus the ``name``
section. It does not validate types: the engine does. Element segments that
hold expressions (flags 4-7) are refused with WasmDecodeError.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from ..errors import WasmDecodeError
from .instructions import Instruction, decode_instruction
from .leb128 import decode_uleb128
from .structure import (
    CustomSection, DataSegment, ElementSegment, Export, FunctionCode, Global, Import, Module, NameMap, SegmentMode,
)
from .types import (
    REFERENCE_TYPES, SECTION_ORDER, ExternKind, FuncType, GlobalType, Limits, SectionId, TableType, ValType,
)
from .writer import MAGIC, VERSION

__all__ = ["decode_module"]

T = TypeVar("T")
_VALTYPE_CODES = frozenset(int(t) for t in ValType)


class _Cursor:
    """Reads from ``data[pos:end]``; every read past ``end`` raises WasmDecodeError."""

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data, self.pos, self.end = data, pos, end

    def byte(self, what: str) -> int:
        if self.pos >= self.end:
            raise WasmDecodeError(f"{what} runs past the end of its section", offset=self.pos)
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u32(self) -> int:
        value, after = decode_uleb128(self.data, self.pos, 32)
        self._advance(after, "u32")
        return value

    def _advance(self, after: int, what: str) -> None:
        if after > self.end:
            raise WasmDecodeError(f"{what} runs past the end of its section", offset=self.pos)
        self.pos = after

    def raw(self, size: int, what: str) -> bytes:
        if self.pos + size > self.end:
            raise WasmDecodeError(f"{what} of {size} bytes runs past the end of its section", offset=self.pos)
        value = bytes(self.data[self.pos:self.pos + size])
        self.pos += size
        return value

    def name(self) -> str:
        start = self.pos
        raw = self.raw(self.u32(), "name")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WasmDecodeError("name is not valid UTF-8", offset=start) from None

    def vec(self, read_item: Callable[[], T]) -> list[T]:
        return [read_item() for _ in range(self.u32())]

    def valtype(self) -> ValType:
        start = self.pos
        code = self.byte("value type")
        if code not in _VALTYPE_CODES:
            raise WasmDecodeError(f"{code:#04x} is not a value type", offset=start)
        return ValType(code)

    def reftype(self) -> ValType:
        start = self.pos
        valtype = self.valtype()
        if valtype not in REFERENCE_TYPES:
            raise WasmDecodeError(f"{valtype.text} is not a reference type", offset=start)
        return valtype

    def limits(self) -> Limits:
        start = self.pos
        flags = self.byte("limits")
        if flags not in (0, 1, 3):
            raise WasmDecodeError(f"limits flags {flags:#04x} are not 0, 1 or 3", offset=start)
        minimum = self.u32()
        maximum = self.u32() if flags & 1 else None
        return Limits(minimum, maximum, shared=flags == 3)

    def functype(self) -> FuncType:
        start = self.pos
        if self.byte("function type") != 0x60:
            raise WasmDecodeError("a function type must start with 0x60", offset=start)
        return FuncType(tuple(self.vec(self.valtype)), tuple(self.vec(self.valtype)))

    def globaltype(self) -> GlobalType:
        valtype = self.valtype()
        start = self.pos
        mutability = self.byte("global mutability")
        if mutability > 1:
            raise WasmDecodeError(f"global mutability {mutability} is not 0 or 1", offset=start)
        return GlobalType(valtype, bool(mutability))

    def tabletype(self) -> TableType:
        reftype = self.reftype()
        return TableType(reftype, self.limits())

    def expr(self) -> tuple[Instruction, ...]:
        """A constant expression up to (not including) its ``end``."""
        out = []
        while True:
            instr, after = decode_instruction(self.data, self.pos)
            self._advance(after, "constant expression")
            if instr.name == "end":
                return tuple(out)
            out.append(instr)

    def done(self, what: str) -> None:
        if self.pos != self.end:
            raise WasmDecodeError(f"{what} has {self.end - self.pos} unread byte(s) at its end", offset=self.pos)


def _import(cur: _Cursor) -> Import:
    module, name = cur.name(), cur.name()
    start = cur.pos
    kind = cur.byte("import kind")
    readers: dict[int, Callable[[], object]] = {
        ExternKind.FUNC: cur.u32, ExternKind.TABLE: cur.tabletype, ExternKind.MEMORY: cur.limits,
        ExternKind.GLOBAL: cur.globaltype,
    }
    if kind not in readers:
        raise WasmDecodeError(f"import kind {kind} is not 0..3", offset=start)
    return Import(module, name, ExternKind(kind), readers[kind]())  # type: ignore[arg-type]


def _export(cur: _Cursor) -> Export:
    name = cur.name()
    start = cur.pos
    kind = cur.byte("export kind")
    if kind > 3:
        raise WasmDecodeError(f"export kind {kind} is not 0..3", offset=start)
    return Export(name, ExternKind(kind), cur.u32())


def _elemkind(cur: _Cursor) -> None:
    start = cur.pos
    if cur.byte("element kind") != 0x00:
        raise WasmDecodeError("element kind must be 0x00 (funcref)", offset=start)


def _element(cur: _Cursor) -> ElementSegment:
    start = cur.pos
    flags = cur.u32()
    if flags == 0:
        offset = cur.expr()
        return ElementSegment(SegmentMode.ACTIVE, tuple(cur.vec(cur.u32)), 0, offset)
    if flags in (1, 3):
        _elemkind(cur)
        mode = SegmentMode.PASSIVE if flags == 1 else SegmentMode.DECLARATIVE
        return ElementSegment(mode, tuple(cur.vec(cur.u32)))
    if flags == 2:
        table = cur.u32()
        offset = cur.expr()
        _elemkind(cur)
        return ElementSegment(SegmentMode.ACTIVE, tuple(cur.vec(cur.u32)), table, offset)
    raise WasmDecodeError(f"element segment flags {flags} (expression elements) are not supported", offset=start)


def _data(cur: _Cursor) -> DataSegment:
    start = cur.pos
    flags = cur.u32()
    if flags == 1:
        return DataSegment(SegmentMode.PASSIVE, cur.raw(cur.u32(), "data segment"))
    if flags in (0, 2):
        memory = cur.u32() if flags == 2 else 0
        offset = cur.expr()
        return DataSegment(SegmentMode.ACTIVE, cur.raw(cur.u32(), "data segment"), memory, offset)
    raise WasmDecodeError(f"data segment flags {flags} are not 0, 1 or 2", offset=start)


def _code(cur: _Cursor) -> FunctionCode:
    size = cur.u32()
    body_end = cur.pos + size
    if body_end > cur.end:
        raise WasmDecodeError(f"function body of {size} bytes runs past the code section", offset=cur.pos)
    inner = _Cursor(cur.data, cur.pos, body_end)
    runs = tuple(inner.vec(lambda: (inner.u32(), inner.valtype())))
    body = inner.raw(body_end - inner.pos, "function body")
    if not body.endswith(b"\x0b"):
        raise WasmDecodeError("function body does not end with the end opcode", offset=body_end - 1)
    cur.pos = body_end
    return FunctionCode(runs, body)


def _name_map(cur: _Cursor) -> dict[int, str]:
    return dict(cur.vec(lambda: (cur.u32(), cur.name())))


def _indirect_name_map(cur: _Cursor) -> dict[int, dict[int, str]]:
    return dict(cur.vec(lambda: (cur.u32(), _name_map(cur))))


def _names(cur: _Cursor) -> NameMap:
    names = NameMap()
    while cur.pos < cur.end:
        sub_id = cur.byte("name subsection id")
        size = cur.u32()
        sub = _Cursor(cur.data, cur.pos, cur.pos + size)
        if sub.end > cur.end:
            raise WasmDecodeError("name subsection runs past the name section", offset=cur.pos)
        if sub_id == 0:
            names.module = sub.name()
        elif sub_id == 1:
            names.functions = _name_map(sub)
        elif sub_id == 2:
            names.locals = _indirect_name_map(sub)
        elif sub_id == 7:
            names.globals = _name_map(sub)
        else:  # other subsections (labels, types, ...) are skipped: they only name things
            sub.pos = sub.end
        sub.done(f"name subsection {sub_id}")
        cur.pos = sub.end
    return names


def _read_section(module: Module, section_id: SectionId, cur: _Cursor) -> None:
    handlers: dict[SectionId, Callable[[], None]] = {
        SectionId.TYPE: lambda: module.types.extend(cur.vec(cur.functype)),
        SectionId.IMPORT: lambda: module.imports.extend(cur.vec(lambda: _import(cur))),
        SectionId.FUNCTION: lambda: module.functions.extend(cur.vec(cur.u32)),
        SectionId.TABLE: lambda: module.tables.extend(cur.vec(cur.tabletype)),
        SectionId.MEMORY: lambda: module.memories.extend(cur.vec(cur.limits)),
        SectionId.GLOBAL: lambda: module.globals.extend(cur.vec(lambda: Global(cur.globaltype(), cur.expr()))),
        SectionId.EXPORT: lambda: module.exports.extend(cur.vec(lambda: _export(cur))),
        SectionId.START: lambda: setattr(module, "start", cur.u32()),
        SectionId.ELEMENT: lambda: module.elements.extend(cur.vec(lambda: _element(cur))),
        SectionId.DATA_COUNT: lambda: setattr(module, "data_count", cur.u32()),
        SectionId.CODE: lambda: module.codes.extend(cur.vec(lambda: _code(cur))),
        SectionId.DATA: lambda: module.data.extend(cur.vec(lambda: _data(cur))),
    }
    handlers[section_id]()


def decode_module(data: bytes | bytearray | memoryview) -> Module:
    """The Module encoded in ``data``; raises WasmDecodeError for malformed bytes."""
    data = bytes(data)
    if data[:4] != MAGIC:
        raise WasmDecodeError("not a WebAssembly module (the magic bytes \\0asm are missing)", offset=0)
    if data[4:8] != VERSION:
        raise WasmDecodeError(f"unsupported binary version {data[4:8].hex()} (expected 01000000)", offset=4)
    module = Module()
    cur = _Cursor(data, 8, len(data))
    last_rank = -1
    while cur.pos < len(data):
        start = cur.pos
        section_byte = cur.byte("section id")
        size = cur.u32()
        section = _Cursor(data, cur.pos, cur.pos + size)
        if section.end > len(data):
            raise WasmDecodeError(f"section {section_byte} of {size} bytes runs past the end", offset=start)
        if section_byte > max(SectionId):
            raise WasmDecodeError(f"unknown section id {section_byte}", offset=start)
        section_id = SectionId(section_byte)
        if section_id is SectionId.CUSTOM:
            name = section.name()
            if name == "name":
                module.names = _names(section)
            else:
                module.custom.append(CustomSection(name, section.raw(section.end - section.pos, "custom section")))
        else:
            rank = SECTION_ORDER.index(section_id)
            if rank <= last_rank:
                raise WasmDecodeError(f"{section_id.name.lower()} section is out of order or repeated", offset=start)
            last_rank = rank
            _read_section(module, section_id, section)
        section.done(f"{section_id.name.lower()} section")
        cur.pos = section.end
    if len(module.functions) != len(module.codes):
        raise WasmDecodeError(
            f"function section declares {len(module.functions)} functions, code section has {len(module.codes)}")
    return module
