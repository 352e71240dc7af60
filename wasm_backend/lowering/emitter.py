"""Emitter: a fast function-body writer for generated code, driven by the same opcode table as BodyWriter.

The code generators write tens of thousands of instructions per module, so this writer skips the
per-call normalisation of ``encoding.BodyWriter``: each instruction name's opcode bytes and immediate
writers are looked up once and cached, and the common immediates (indices, integers, floats, memory
arguments, block types, labels) are written directly. Immediates of other kinds go through the
table's codecs. Labels are names of open ``block``/``loop``/``if`` constructs, turned into relative
depths. An Emitter can stand in for a FunctionBuilder's ``code`` (it has ``finish()``), and code
written for a BodyWriter (``w.local_get(0)``, ``w.emit("f32x4.add")``) writes to it too.

Raises WasmEncodingError for an unknown instruction, a wrong immediate count, an unknown label or
unbalanced blocks.
"""

from __future__ import annotations

import struct
from typing import Callable

from ..encoding.body_writer import METHOD_NAMES
from ..encoding.immediates import IMMEDIATE_CODECS, MemArg
from ..encoding.instructions import opcode_row
from ..encoding.leb128 import encode_sleb128, encode_uleb128
from ..encoding.types import ValType
from ..errors import WasmEncodingError

__all__ = ["Emitter"]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def _uleb(value: int, out: bytearray) -> None:
    if 0 <= value < 0x80:
        out.append(value)
    else:
        out += encode_uleb128(value, 32)


def _sleb32(value: int, out: bytearray) -> None:
    if -64 <= value < 64:
        out.append(value & 0x7F)
        return
    if value >= 1 << 31:
        value -= 1 << 32
    out += encode_sleb128(value, 32)


def _sleb64(value: int, out: bytearray) -> None:
    if -64 <= value < 64:
        out.append(value & 0x7F)
        return
    if value >= 1 << 63:
        value -= 1 << 64
    out += encode_sleb128(value, 64)


def _f32(value: float, out: bytearray) -> None:
    out += _F32.pack(value)


def _f64(value: float, out: bytearray) -> None:
    out += _F64.pack(value)


def _memarg(natural: int) -> Callable[[object, bytearray], None]:
    def write(value: object, out: bytearray) -> None:
        if isinstance(value, MemArg):
            align = natural if value.align is None else value.align
            offset = value.offset
        else:
            align, offset = natural, value
        _uleb(align, out)
        _uleb(offset, out)  # type: ignore[arg-type]
    return write


def _blocktype(value: object, out: bytearray) -> None:
    if value is None:
        out.append(0x40)
    elif isinstance(value, ValType):
        out.append(int(value))
    else:
        out += encode_sleb128(int(value), 33)  # type: ignore[call-overload]


def _codec_writer(kind: str, name: str) -> Callable[[object, bytearray], None]:
    codec = IMMEDIATE_CODECS[kind]
    return lambda value, out: codec.write(codec.normalize(value, name), out)


_FAST_WRITERS: dict[str, Callable[[object, bytearray], None]] = {
    "localidx": _uleb, "globalidx": _uleb, "funcidx": _uleb, "typeidx": _uleb, "tableidx": _uleb,
    "memidx": _uleb, "dataidx": _uleb,
    "i32": _sleb32, "i64": _sleb64, "f32": _f32, "f64": _f64, "blocktype": _blocktype,
    **{f"memarg{n}": _memarg(n) for n in range(5)},
    **{f"lane{n}": (lambda v, out: out.append(v)) for n in (2, 4, 8, 16)},
}

#: name -> (opcode bytes, immediate writers), filled on first use of each name
_ENCODINGS: dict[str, tuple[bytes, tuple]] = {}


def _encoding(name: str) -> tuple[bytes, tuple]:
    cached = _ENCODINGS.get(name)
    if cached is None:
        row = opcode_row(name)
        prefix = bytes([row.code[0]]) + (encode_uleb128(row.code[1], 32) if len(row.code) > 1 else b"")
        writers = tuple(_FAST_WRITERS.get(kind) or _codec_writer(kind, name) for kind in row.immediates)
        cached = _ENCODINGS[name] = (prefix, writers)
    return cached


_OPENERS = frozenset({"block", "loop", "if"})


class _Scope:
    __slots__ = ("_emitter", "_depth")

    def __init__(self, emitter: "Emitter", depth: int) -> None:
        self._emitter = emitter
        self._depth = depth

    def __enter__(self) -> "Emitter":
        return self._emitter

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            if len(self._emitter._labels) != self._depth:
                raise WasmEncodingError("a block closed by its with-statement while an inner construct is open")
            self._emitter.end()


class Emitter:
    """The instructions of one function body (see the module docstring); ``finish()`` adds the final end."""

    __slots__ = ("code", "_labels", "_finished")

    def __init__(self) -> None:
        self.code = bytearray()
        self._labels: list[str | None] = []
        self._finished: bytes | None = None

    def op(self, name: str, *immediates: object) -> "Emitter":
        """Write instruction ``name`` with its immediates (branch labels as names or depths)."""
        prefix, writers = _encoding(name)
        if len(immediates) != len(writers):
            raise WasmEncodingError(f"{name} takes {len(writers)} immediate(s), got {len(immediates)}")
        code = self.code
        code += prefix
        for write, value in zip(writers, immediates):
            write(value, code)
        if name in _OPENERS:
            self._labels.append(None)
        elif name == "end":
            if not self._labels:
                raise WasmEncodingError("end without an open block, loop or if")
            self._labels.pop()
        return self

    # ---- frequent instructions -----------------------------------------------------------------------
    def get(self, local: int) -> "Emitter":
        code = self.code
        code.append(0x20)
        _uleb(local, code)
        return self

    def set(self, local: int) -> "Emitter":
        code = self.code
        code.append(0x21)
        _uleb(local, code)
        return self

    def tee(self, local: int) -> "Emitter":
        code = self.code
        code.append(0x22)
        _uleb(local, code)
        return self

    def i32(self, value: int) -> "Emitter":
        code = self.code
        code.append(0x41)
        _sleb32(value & 0xFFFFFFFF if value >= 0 else value, code)
        return self

    def i64(self, value: int) -> "Emitter":
        code = self.code
        code.append(0x42)
        _sleb64(value & 0xFFFFFFFFFFFFFFFF if value >= 0 else value, code)
        return self

    def f32(self, value: float) -> "Emitter":
        self.code.append(0x43)
        _f32(value, self.code)
        return self

    def f64(self, value: float) -> "Emitter":
        self.code.append(0x44)
        _f64(value, self.code)
        return self

    def emit(self, name: str, *immediates: object) -> "Emitter":
        """BodyWriter's spelling of ``op`` (code written for a BodyWriter can write to an Emitter)."""
        return self.op(name, *immediates)

    def __getattr__(self, attribute: str):
        """BodyWriter's per-instruction methods (``w.local_get(0)``, ``w.v128_const(data)``)."""
        name = METHOD_NAMES.get(attribute)
        if name is None:
            raise AttributeError(f"Emitter has no instruction method {attribute!r}")
        return lambda *immediates: self.op(name, *immediates)

    def ops(self, *names: str) -> "Emitter":
        """Write several instructions without immediates."""
        for name in names:
            self.op(name)
        return self

    # ---- structure ------------------------------------------------------------------------------------
    def _open(self, name: str, label: str | None, blocktype: object) -> _Scope:
        self.op(name, blocktype)
        self._labels[-1] = label
        return _Scope(self, len(self._labels))

    def block(self, label: str | None = None, blocktype: object = None) -> _Scope:
        return self._open("block", label, blocktype)

    def loop(self, label: str | None = None, blocktype: object = None) -> _Scope:
        return self._open("loop", label, blocktype)

    def while_below(self, i: int, end: int, step: int, body: Callable[[], None], *,
                    labels: tuple[str, str] = ("done", "next")) -> "Emitter":
        """``while i < end (unsigned) { body(); i += step }`` over the i32 locals ``i`` and ``end`` (``i`` is
        not initialised here); ``labels`` names the block and the loop (for branches inside ``body``)."""
        with self.block(labels[0]):
            with self.loop(labels[1]):
                self.get(i).get(end).op("i32.ge_u").br_if(labels[0])
                body()
                self.get(i).i32(step).op("i32.add").set(i)
                self.br(labels[1])
        return self

    def if_(self, label: str | None = None, blocktype: object = None) -> _Scope:
        return self._open("if", label, blocktype)

    def else_(self) -> "Emitter":
        self.code.append(0x05)
        return self

    def end(self) -> "Emitter":
        return self.op("end")

    def depth(self, label: str | int) -> int:
        """The relative depth of the innermost open construct named ``label`` (ints pass through)."""
        if isinstance(label, int):
            return label
        labels = self._labels
        for k in range(len(labels) - 1, -1, -1):
            if labels[k] == label:
                return len(labels) - 1 - k
        raise WasmEncodingError(f"no open block, loop or if is labelled {label!r}")

    def br(self, label: str | int) -> "Emitter":
        self.code.append(0x0C)
        _uleb(self.depth(label), self.code)
        return self

    def br_if(self, label: str | int) -> "Emitter":
        self.code.append(0x0D)
        _uleb(self.depth(label), self.code)
        return self

    def br_table(self, labels: list, default: str | int) -> "Emitter":
        code = self.code
        code.append(0x0E)
        _uleb(len(labels), code)
        for label in labels:
            _uleb(self.depth(label), code)
        _uleb(self.depth(default), code)
        return self

    def call(self, function: int) -> "Emitter":
        self.code.append(0x10)
        _uleb(function, self.code)
        return self

    @property
    def open_constructs(self) -> int:
        return len(self._labels)

    def finish(self) -> bytes:
        """The body's bytes with the function's final ``end``; raises if constructs are still open."""
        if self._finished is None:
            if self._labels:
                raise WasmEncodingError(f"function body ends with {len(self._labels)} open construct(s)")
            self._finished = bytes(self.code) + b"\x0b"
        return self._finished
