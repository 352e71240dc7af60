"""The documented error classes. Every error atlas-web raises on purpose derives from AtlasError.

Two families, as in wasmtime: errors about the input (ProgramError,
UnsupportedOperation, and the host-API errors) are raised before anything
runs; AtlasTrap is raised when a launch stops at run time.
"""

from __future__ import annotations

import enum

__all__ = [
    "AtlasError", "ProgramError", "UnsupportedOperation", "AllocationFailed",
    "InvalidBuffer", "ExecutionFailed", "BackendUnavailable", "BackendClosed", "AtlasTrap", "TrapCode",
    "ArrayError",
]


class AtlasError(Exception):
    """Base of every error atlas-web raises on purpose."""


class ProgramError(AtlasError, ValueError):
    """A malformed instruction, program, text, bytecode or JSON.

    ``index`` is the instruction index (or None), ``text`` that instruction's
    assembly (or None), ``reason`` what is wrong.
    """

    def __init__(self, reason: str, *, index: int | None = None, text: str | None = None) -> None:
        self.reason = reason
        self.index = index
        self.text = text
        where = ""
        if index is not None:
            where = f"instruction {index}"
            if text:
                where += f" ({text})"
            where += ": "
        super().__init__(where + reason)


class UnsupportedOperation(AtlasError, NotImplementedError):
    """A backend cannot compile an instruction for a type; raised at compile time."""

    def __init__(self, op: str, ty: object, backend: str, detail: str = "") -> None:
        self.op = op
        self.ty = ty
        self.backend = backend
        tname = getattr(ty, "name", ty)
        msg = f"{op} on {tname} is not supported by the {backend!r} backend"
        super().__init__(msg + (f": {detail}" if detail else ""))


class AllocationFailed(AtlasError, MemoryError):
    """An allocation could not be satisfied; the message says what was asked and what is left."""


class InvalidBuffer(AtlasError, KeyError):
    """A handle that names no live buffer or pool, a host copy outside one, or host data that cannot
    be copied as asked (not bytes-like; not storable as the element type a typed helper names)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ExecutionFailed(AtlasError, RuntimeError):
    """A launch could not run for a reason other than a trap (bad launch shape, engine failure)."""


class ArrayError(AtlasError, ValueError):
    """An ``atlas_web.numpy`` operation whose operands do not fit: shapes that do not broadcast, a dtype
    the operation does not take, an axis out of range, arrays on different devices. The message names the
    operation and the shapes and dtypes involved."""


class BackendUnavailable(AtlasError, RuntimeError):
    """A backend cannot start here (missing package, no adapter); the message says why."""


class BackendClosed(BackendUnavailable):
    """A call on a backend after its ``close()``: the backend released its device, memory, buffers and
    pools; make a new one. The message names the backend and the call."""


class TrapCode(enum.IntEnum):
    """Why a launch trapped. Same code on every backend."""

    OUT_OF_BOUNDS = 1
    MISALIGNED = 2
    INVALID_HANDLE = 3
    DIVISION_BY_ZERO = 4
    INTEGER_OVERFLOW = 5
    BUDGET_EXCEEDED = 6
    INVALID_CLASS = 7
    POOL_EXHAUSTED = 8
    INVALID_SPARSE = 9

    @property
    def meaning(self) -> str:
        """What the program did, in words (for messages)."""
        return _TRAP_MEANINGS[self]


#: TrapCode -> what the program did (docs/semantics.md, Traps)
_TRAP_MEANINGS: dict[TrapCode, str] = {
    TrapCode.OUT_OF_BOUNDS: "an access (or pointer offset) outside its allocation or the shared memory",
    TrapCode.MISALIGNED: "an access not aligned to its type's size (8 bytes for extended integers)",
    TrapCode.INVALID_HANDLE: "a pointer or handle that names no live buffer or pool",
    TrapCode.DIVISION_BY_ZERO: "an integer division or remainder by zero",
    TrapCode.INTEGER_OVERFLOW: "a signed integer MIN / -1 (division or remainder)",
    TrapCode.BUDGET_EXCEEDED: "more backward jumps than the lane's execution budget allows (a runaway loop?)",
    TrapCode.INVALID_CLASS: "an Atlas class id of 96 or more",
    TrapCode.POOL_EXHAUSTED: "a pool the backend could not allocate",
    TrapCode.INVALID_SPARSE: "a sparse (CSR) matrix whose row pointers decrease or whose column index is k or more",
}


class AtlasTrap(AtlasError):
    """A launch stopped at run time: ``code`` (TrapCode), ``instruction_index`` and ``lane``.

    ``detail`` (the message's end) says what went wrong; without one, the code's meaning. ``record``:
    the numbers it was worded from (``atlas_web.trap_report.TrapRecord``), or None.

    ``lane`` is the global lane id, or -1 for a cooperative instruction, which
    runs once per launch.
    """

    def __init__(self, code: TrapCode, instruction_index: int, lane: int, detail: str = "",
                 record: object = None) -> None:
        self.code = TrapCode(code)
        self.instruction_index = instruction_index
        self.lane = lane
        self.detail = detail
        self.record = record
        who = "the cooperative step" if lane < 0 else f"lane {lane}"
        super().__init__(f"trap {self.code.name} at instruction {instruction_index} in {who}: "
                         f"{detail or self.code.meaning}")

    def __reduce__(self):
        return (type(self), (self.code, self.instruction_index, self.lane, self.detail, self.record))
