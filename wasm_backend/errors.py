"""The errors the WebAssembly backend raises, all derived from ``atlas_web.errors``.

Two families, as in the core:

- input errors, raised before anything runs: ``WasmEncodingError`` (the
  encoder was asked for something WebAssembly cannot express: an unknown
  instruction, an immediate out of range, unbalanced blocks),
  ``WasmDecodeError`` (bytes that are not a well-formed module),
  ``WasmValidationError`` (the engine refused to compile a module) and
  ``WasmInterfaceError`` (imports, exports or call arguments that do not match
  the module);
- ``WasmTrap``, raised when running code stops: it carries the engine-neutral
  ``WasmTrapKind``, the engine's own trap text and, where one exists, the Atlas
  ``TrapCode`` the lowering should report.
"""

from __future__ import annotations

import enum

from atlas_web.errors import AtlasError, ExecutionFailed, ProgramError, TrapCode

__all__ = [
    "WasmEncodingError", "WasmDecodeError", "WasmValidationError", "WasmInterfaceError",
    "WasmTrapKind", "WasmTrap", "ATLAS_CODE_OF_TRAP",
]


class WasmEncodingError(ProgramError):
    """The encoder was asked for something it cannot write; the message names the instruction or item."""


class WasmDecodeError(ProgramError):
    """Bytes that are not a well-formed WebAssembly module; the message gives the byte offset."""

    def __init__(self, reason: str, *, offset: int | None = None) -> None:
        self.offset = offset
        super().__init__(reason if offset is None else f"at byte {offset:#x}: {reason}")


class WasmValidationError(ProgramError):
    """The engine refused a module (it does not validate); ``engine_message`` is the engine's text."""

    def __init__(self, reason: str, *, engine_message: str = "") -> None:
        self.engine_message = engine_message
        super().__init__(reason)


class WasmInterfaceError(ExecutionFailed):
    """Imports, exports, memory settings or call arguments that do not fit the module."""


class WasmTrapKind(enum.Enum):
    """Why WebAssembly code trapped, in words every engine can be mapped to."""

    UNREACHABLE = "unreachable"
    MEMORY_OUT_OF_BOUNDS = "memory out of bounds"
    MISALIGNED_ACCESS = "misaligned atomic access"
    TABLE_OUT_OF_BOUNDS = "table out of bounds"
    INDIRECT_CALL_TO_NULL = "indirect call to null"
    INDIRECT_CALL_TYPE_MISMATCH = "indirect call type mismatch"
    NULL_REFERENCE = "null reference"
    INTEGER_DIVIDE_BY_ZERO = "integer divide by zero"
    INTEGER_OVERFLOW = "integer overflow"
    INVALID_CONVERSION_TO_INTEGER = "invalid conversion to integer"
    STACK_OVERFLOW = "call stack exhausted"
    BUDGET_EXHAUSTED = "execution budget exhausted"
    OTHER = "other"


#: the Atlas trap code a lowering reports for an engine trap (kinds absent here are compiler bugs)
ATLAS_CODE_OF_TRAP: dict[WasmTrapKind, TrapCode] = {
    WasmTrapKind.MEMORY_OUT_OF_BOUNDS: TrapCode.OUT_OF_BOUNDS,
    WasmTrapKind.MISALIGNED_ACCESS: TrapCode.MISALIGNED,
    WasmTrapKind.INTEGER_DIVIDE_BY_ZERO: TrapCode.DIVISION_BY_ZERO,
    WasmTrapKind.INTEGER_OVERFLOW: TrapCode.INTEGER_OVERFLOW,
    WasmTrapKind.BUDGET_EXHAUSTED: TrapCode.BUDGET_EXCEEDED,
}


class WasmTrap(AtlasError):
    """WebAssembly code trapped: ``kind`` (WasmTrapKind), ``engine`` and ``engine_message``.

    The runner that raised it stays usable; linear memory keeps what the code
    wrote before the trap.
    """

    def __init__(self, kind: WasmTrapKind, *, engine: str, engine_message: str = "", export: str = "") -> None:
        self.kind = WasmTrapKind(kind)
        self.engine = engine
        self.engine_message = engine_message
        self.export = export
        where = f" in {export!r}" if export else ""
        super().__init__(f"wasm trap{where}: {self.kind.value} ({engine})")

    @property
    def atlas_code(self) -> TrapCode | None:
        """The Atlas TrapCode matching ``kind``, or None where no Atlas program may cause it."""
        return ATLAS_CODE_OF_TRAP.get(self.kind)

    def __reduce__(self):
        return (_rebuild_trap, (self.kind, self.engine, self.engine_message, self.export))


def _rebuild_trap(kind: WasmTrapKind, engine: str, engine_message: str, export: str) -> WasmTrap:
    return WasmTrap(kind, engine=engine, engine_message=engine_message, export=export)
