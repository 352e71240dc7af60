"""BodyWriter: writes one function body's instructions, checking block nesting and resolving labels.

Every instruction of the table can be written with ``emit(name, *immediates)``
or as a method named after it with dots as underscores (``w.i32_add()``,
``w.local_get(0)``, ``w.v128_load(MemArg(offset=16))``); names that are Python
keywords take a trailing underscore (``w.return_()``, ``w.if_()``,
``w.else_()``). Block instructions push a control frame and ``end`` pops it;
a branch may name its target by label (``w.br_if("exit")``), which is turned
into the relative depth WebAssembly wants. ``resolvers`` turn names into
indices for other immediate kinds (the module builder resolves function,
global and local names). ``block``, ``loop`` and ``if_`` also
work as context managers that write the matching ``end``.
"""

from __future__ import annotations

import functools
import keyword
from dataclasses import dataclass
from typing import Callable, Mapping

from ..errors import WasmEncodingError
from .instructions import normalize_immediates, opcode_row, write_normalized
from .opcodes import WASM_OPCODES, OpcodeRow

__all__ = ["BodyWriter", "METHOD_NAMES"]

_LABEL_KINDS = frozenset({"labelidx", "labels"})


def _method_name(name: str) -> str:
    alias = name.replace(".", "_")
    return alias + "_" if keyword.iskeyword(alias) else alias


#: method spelling -> table name, for every row
METHOD_NAMES: dict[str, str] = {_method_name(row.name): row.name for row in WASM_OPCODES}
if len(METHOD_NAMES) != len(WASM_OPCODES):
    raise AssertionError("two WebAssembly instructions share a BodyWriter method name")


@dataclass(slots=True)
class _Frame:
    kind: str               # "function", "block", "loop", "if" or "else"
    label: str | None


class _Scope:
    """Returned by block/loop/if_: as a context manager it writes the matching ``end``."""

    __slots__ = ("_writer", "_frame")

    def __init__(self, writer: "BodyWriter", frame: _Frame) -> None:
        self._writer = writer
        self._frame = frame

    def __enter__(self) -> "BodyWriter":
        return self._writer

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._writer._end_scope(self._frame)


def _open(writer: "BodyWriter", row: OpcodeRow) -> None:
    writer._frames.append(_Frame(row.name, None))


def _else(writer: "BodyWriter", row: OpcodeRow) -> None:
    top = writer._frames[-1]
    if top.kind != "if":
        raise WasmEncodingError(f"else without a matching if (innermost open construct: {top.kind})")
    top.kind = "else"


def _end(writer: "BodyWriter", row: OpcodeRow) -> None:
    if len(writer._frames) == 1:
        raise WasmEncodingError("end without an open block, loop or if (finish() writes the function's own end)")
    writer._frames.pop()


# control-flow bookkeeping by instruction name
_CONTROL_EFFECTS: dict[str, Callable[["BodyWriter", OpcodeRow], None]] = {
    "block": _open, "loop": _open, "if": _open, "else": _else, "end": _end,
}


class BodyWriter:
    """The instructions of one function body. ``finish()`` returns them with the final ``end``.

    Raises WasmEncodingError for unknown instructions, bad immediates, unknown
    labels, unbalanced ``else``/``end`` and writing after ``finish()``.
    """

    def __init__(self, function_label: str | None = None, *,
                 resolvers: Mapping[str, Callable[[str], int]] | None = None) -> None:
        self._code = bytearray()
        self._resolvers = dict(resolvers or {})
        self._frames: list[_Frame] = [_Frame("function", function_label)]
        self._finished: bytes | None = None
        self.instruction_count = 0

    # --- writing -------------------------------------------------------------------------------------------

    def emit(self, name: str, *immediates: object) -> "BodyWriter":
        """Write instruction ``name`` with its immediates; label immediates may be label names."""
        if self._finished is not None:
            raise WasmEncodingError(f"{name}: the function body is already finished")
        row = opcode_row(name)
        resolved = tuple(self._resolve(kind, value) for kind, value in zip(row.immediates, immediates))
        resolved += immediates[len(row.immediates):]
        values = normalize_immediates(row, resolved)
        effect = _CONTROL_EFFECTS.get(row.name)
        if effect is not None:
            effect(self, row)
        write_normalized(row, values, self._code)
        self.instruction_count += 1
        return self

    def __getattr__(self, attribute: str) -> Callable[..., "BodyWriter"]:
        try:
            name = METHOD_NAMES[attribute]
        except KeyError:
            raise AttributeError(f"BodyWriter has no instruction method {attribute!r}") from None
        return functools.partial(self.emit, name)

    def block(self, blocktype: object = None, *, label: str | None = None) -> _Scope:
        """Open a ``block`` (a branch to it jumps past its end)."""
        return self._open_labeled("block", blocktype, label)

    def loop(self, blocktype: object = None, *, label: str | None = None) -> _Scope:
        """Open a ``loop`` (a branch to it jumps back to its start)."""
        return self._open_labeled("loop", blocktype, label)

    def if_(self, blocktype: object = None, *, label: str | None = None) -> _Scope:
        """Open an ``if`` on the i32 condition on the stack."""
        return self._open_labeled("if", blocktype, label)

    def else_(self) -> "BodyWriter":
        return self.emit("else")

    def end(self) -> "BodyWriter":
        return self.emit("end")

    def finish(self) -> bytes:
        """The body's instruction bytes with the function's final ``end``; raises if blocks are still open."""
        if self._finished is None:
            if len(self._frames) > 1:
                opened = ", ".join(f.kind + (f" {f.label!r}" if f.label else "") for f in self._frames[1:])
                raise WasmEncodingError(f"function body ends with {len(self._frames) - 1} open construct(s): {opened}")
            self._code.append(0x0B)
            self._finished = bytes(self._code)
        return self._finished

    # --- labels --------------------------------------------------------------------------------------------

    def depth(self, label: str) -> int:
        """The relative branch depth of the innermost open construct labelled ``label``."""
        for depth, frame in enumerate(reversed(self._frames)):
            if frame.label == label:
                return depth
        known = [f.label for f in self._frames if f.label is not None]
        raise WasmEncodingError(f"no open block, loop or if is labelled {label!r} (open labels: {known})")

    @property
    def open_constructs(self) -> int:
        """Blocks, loops and ifs currently open (the function itself not counted)."""
        return len(self._frames) - 1

    def _resolve(self, kind: str, value: object) -> object:
        if kind not in _LABEL_KINDS:
            resolver = self._resolvers.get(kind)
            return resolver(value) if resolver is not None and isinstance(value, str) else value
        if kind == "labelidx":
            return self.depth(value) if isinstance(value, str) else value
        if isinstance(value, (list, tuple)):
            return tuple(self.depth(v) if isinstance(v, str) else v for v in value)
        return value

    def _open_labeled(self, name: str, blocktype: object, label: str | None) -> _Scope:
        if label is not None and not isinstance(label, str):
            raise WasmEncodingError(f"{name}: label must be a str, got {label!r}")
        self.emit(name, blocktype)
        frame = self._frames[-1]
        frame.label = label
        return _Scope(self, frame)

    def _end_scope(self, frame: _Frame) -> None:
        if self._frames[-1] is not frame:
            named = f"{frame.kind} {frame.label!r}" if frame.label else frame.kind
            raise WasmEncodingError(f"{named} closed by its with-statement while an inner construct is open")
        self.emit("end")
