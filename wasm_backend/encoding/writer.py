"""Serialise a ``structure.Module`` to WebAssembly binary bytes.

Each section is written to its own buffer and framed as ``id, uleb(len),
payload``; empty sections are left out. The ``name`` section and other custom
sections come last.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from ..errors import WasmEncodingError
from .instructions import Instruction, encode_instruction
from .leb128 import encode_uleb128
from .structure import CustomSection, DataSegment, ElementSegment, FunctionCode, Module, NameMap, SegmentMode
from .types import MAX_PAGES, ExternKind, FuncType, GlobalType, Limits, SectionId, TableType

__all__ = ["encode_module", "MAGIC", "VERSION"]

MAGIC = b"\x00asm"
VERSION = b"\x01\x00\x00\x00"

T = TypeVar("T")


def _u32(value: int) -> bytes:
    return encode_uleb128(value, 32)


def _name(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _u32(len(raw)) + raw


def _vec(items: Iterable[T], write_item: Callable[[T], bytes]) -> bytes:
    parts = [write_item(item) for item in items]
    return _u32(len(parts)) + b"".join(parts)


def _expr(instructions: Iterable[Instruction]) -> bytes:
    return b"".join(encode_instruction(i.name, i.immediates) for i in instructions) + b"\x0b"


def _functype(ft: FuncType) -> bytes:
    return b"\x60" + _vec(ft.params, lambda t: bytes([t])) + _vec(ft.results, lambda t: bytes([t]))


def _limits(limits: Limits) -> bytes:
    if limits.max is None:
        if limits.shared:
            raise WasmEncodingError("a shared memory needs a max")
        return b"\x00" + _u32(limits.min)
    return (b"\x03" if limits.shared else b"\x01") + _u32(limits.min) + _u32(limits.max)


def _tabletype(tt: TableType) -> bytes:
    return bytes([tt.reftype]) + _limits(tt.limits)


def _globaltype(gt: GlobalType) -> bytes:
    return bytes([gt.valtype, 1 if gt.mutable else 0])


# import descriptor writers by kind
_IMPORT_DESC: dict[ExternKind, Callable[[object], bytes]] = {
    ExternKind.FUNC: lambda d: _u32(d),  # type: ignore[arg-type]
    ExternKind.TABLE: _tabletype,  # type: ignore[dict-item]
    ExternKind.MEMORY: _limits,  # type: ignore[dict-item]
    ExternKind.GLOBAL: _globaltype,  # type: ignore[dict-item]
}


def _element(seg: ElementSegment) -> bytes:
    funcs = _vec(seg.functions, _u32)
    if seg.mode is SegmentMode.ACTIVE:
        if seg.offset is None:
            raise WasmEncodingError("an active element segment needs an offset expression")
        if seg.table == 0:
            return b"\x00" + _expr(seg.offset) + funcs
        return b"\x02" + _u32(seg.table) + _expr(seg.offset) + b"\x00" + funcs
    flag = b"\x01" if seg.mode is SegmentMode.PASSIVE else b"\x03"
    return flag + b"\x00" + funcs


def _data(seg: DataSegment) -> bytes:
    payload = _u32(len(seg.data)) + seg.data
    if seg.mode is SegmentMode.PASSIVE:
        return b"\x01" + payload
    if seg.mode is not SegmentMode.ACTIVE or seg.offset is None:
        raise WasmEncodingError(f"a data segment must be passive or active with an offset, got {seg.mode.value}")
    if seg.memory == 0:
        return b"\x00" + _expr(seg.offset) + payload
    return b"\x02" + _u32(seg.memory) + _expr(seg.offset) + payload


def _locals(code: FunctionCode) -> bytes:
    return _vec(code.locals, lambda run: _u32(run[0]) + bytes([run[1]]))


def _code(code: FunctionCode) -> bytes:
    if not code.body.endswith(b"\x0b"):
        raise WasmEncodingError("a function body must end with the end opcode (0x0b)")
    func = _locals(code) + code.body
    return _u32(len(func)) + func


def _name_map(entries: dict[int, str]) -> bytes:
    return _vec(sorted(entries.items()), lambda kv: _u32(kv[0]) + _name(kv[1]))


def _names(names: NameMap) -> bytes:
    out = bytearray()
    subsections = []
    if names.module:
        subsections.append((0, _name(names.module)))
    if names.functions:
        subsections.append((1, _name_map(names.functions)))
    if names.locals:
        subsections.append((2, _vec(sorted(names.locals.items()), lambda kv: _u32(kv[0]) + _name_map(kv[1]))))
    if names.globals:
        subsections.append((7, _name_map(names.globals)))
    for sub_id, payload in subsections:
        out.append(sub_id)
        out.extend(_u32(len(payload)) + payload)
    return bytes(out)


def _section(section_id: int, payload: bytes) -> bytes:
    return bytes([section_id]) + _u32(len(payload)) + payload


def _custom(section: CustomSection) -> bytes:
    return _section(SectionId.CUSTOM, _name(section.name) + section.payload)


def encode_module(module: Module) -> bytes:
    """The binary form of ``module``; raises WasmEncodingError for what cannot be written.

    This is a serialiser, not a validator: the engine validates.
    """
    if len(module.functions) != len(module.codes):
        raise WasmEncodingError(
            f"{len(module.functions)} functions are declared but {len(module.codes)} bodies are given")
    for limits in module.memories:
        limits.check("memory", MAX_PAGES)
    sections: list[tuple[SectionId, bytes]] = [
        (SectionId.TYPE, _vec(module.types, _functype) if module.types else b""),
        (SectionId.IMPORT, _vec(module.imports, lambda i: _name(i.module) + _name(i.name) + bytes([i.kind])
                                + _IMPORT_DESC[i.kind](i.desc)) if module.imports else b""),
        (SectionId.FUNCTION, _vec(module.functions, _u32) if module.functions else b""),
        (SectionId.TABLE, _vec(module.tables, _tabletype) if module.tables else b""),
        (SectionId.MEMORY, _vec(module.memories, _limits) if module.memories else b""),
        (SectionId.GLOBAL, _vec(module.globals, lambda g: _globaltype(g.type) + _expr(g.init))
         if module.globals else b""),
        (SectionId.EXPORT, _vec(module.exports, lambda e: _name(e.name) + bytes([e.kind]) + _u32(e.index))
         if module.exports else b""),
        (SectionId.START, _u32(module.start) if module.start is not None else b""),
        (SectionId.ELEMENT, _vec(module.elements, _element) if module.elements else b""),
        (SectionId.DATA_COUNT, _u32(module.data_count) if module.data_count is not None else b""),
        (SectionId.CODE, _vec(module.codes, _code) if module.codes else b""),
        (SectionId.DATA, _vec(module.data, _data) if module.data else b""),
    ]
    out = bytearray(MAGIC + VERSION)
    for section_id, payload in sections:
        if payload:
            out.extend(_section(section_id, payload))
    if module.names:
        out.extend(_custom(CustomSection("name", _names(module.names))))
    for custom in module.custom:
        out.extend(_custom(custom))
    return bytes(out)
