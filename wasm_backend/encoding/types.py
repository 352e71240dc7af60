"""WebAssembly types and the small enums of the binary format (wasm 2.0)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import WasmEncodingError

__all__ = [
    "ValType", "REFERENCE_TYPES", "ExternKind", "SectionId", "SECTION_ORDER", "FuncType", "Limits", "TableType",
    "GlobalType", "PAGE_SIZE", "MAX_PAGES", "as_valtype", "as_valtypes",
]

#: bytes in a WebAssembly page
PAGE_SIZE = 65536
#: the most pages a 32-bit memory may have (4 GiB)
MAX_PAGES = 65536


class ValType(enum.IntEnum):
    """Value types, by their binary code."""

    I32 = 0x7F
    I64 = 0x7E
    F32 = 0x7D
    F64 = 0x7C
    V128 = 0x7B
    FUNCREF = 0x70
    EXTERNREF = 0x6F

    @property
    def text(self) -> str:
        """The WAT spelling: ``i32`` … ``externref``."""
        return self.name.lower()


#: the value types a table may hold and ``ref.null`` may name
REFERENCE_TYPES = frozenset({ValType.FUNCREF, ValType.EXTERNREF})

_VALTYPE_BY_TEXT = {t.text: t for t in ValType}


def as_valtype(value: object, what: str = "value type") -> ValType:
    """``value`` (a ValType or its WAT name such as ``"f32"``) as a ValType; raises WasmEncodingError."""
    if isinstance(value, ValType):
        return value
    if isinstance(value, str) and value in _VALTYPE_BY_TEXT:
        return _VALTYPE_BY_TEXT[value]
    raise WasmEncodingError(f"{what}: {value!r} is not a value type (one of {', '.join(_VALTYPE_BY_TEXT)})")


def as_valtypes(values: object, what: str = "value types") -> tuple[ValType, ...]:
    """A sequence of value types as a tuple of ValType; raises WasmEncodingError."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise WasmEncodingError(f"{what}: expected a sequence of value types, got {values!r}")
    return tuple(as_valtype(v, what) for v in values)  # type: ignore[union-attr]


class ExternKind(enum.IntEnum):
    """What an import or export is, by its binary code."""

    FUNC = 0
    TABLE = 1
    MEMORY = 2
    GLOBAL = 3

    @property
    def text(self) -> str:
        return self.name.lower()


class SectionId(enum.IntEnum):
    """Section ids of the binary format."""

    CUSTOM = 0
    TYPE = 1
    IMPORT = 2
    FUNCTION = 3
    TABLE = 4
    MEMORY = 5
    GLOBAL = 6
    EXPORT = 7
    START = 8
    ELEMENT = 9
    CODE = 10
    DATA = 11
    DATA_COUNT = 12


#: the order non-custom sections must appear in (the data count section precedes the code)
SECTION_ORDER: tuple[SectionId, ...] = (
    SectionId.TYPE, SectionId.IMPORT, SectionId.FUNCTION, SectionId.TABLE, SectionId.MEMORY, SectionId.GLOBAL,
    SectionId.EXPORT, SectionId.START, SectionId.ELEMENT, SectionId.DATA_COUNT, SectionId.CODE, SectionId.DATA,
)


@dataclass(frozen=True, slots=True)
class FuncType:
    """A function type: parameter and result value types."""

    params: tuple[ValType, ...] = ()
    results: tuple[ValType, ...] = ()

    @classmethod
    def of(cls, params: object = (), results: object = ()) -> "FuncType":
        """A FuncType from sequences of ValType or WAT names; raises WasmEncodingError."""
        return cls(as_valtypes(params, "function parameters"), as_valtypes(results, "function results"))

    def text(self) -> str:
        """``(param i32 i32) (result i32)`` (empty parts left out)."""
        parts = []
        if self.params:
            parts.append("(param " + " ".join(t.text for t in self.params) + ")")
        if self.results:
            parts.append("(result " + " ".join(t.text for t in self.results) + ")")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits of a memory (in pages) or table (in elements); ``shared`` only for memories (threads)."""

    min: int
    max: int | None = None
    shared: bool = False

    def check(self, what: str, ceiling: int) -> None:
        """Raise WasmEncodingError unless ``min <= max <= ceiling`` and a shared memory has a max."""
        for name, value in (("min", self.min), ("max", self.max)):
            if value is None and name == "max":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= ceiling:
                raise WasmEncodingError(f"{what}: {name} {value!r} is not an int in 0..{ceiling}")
        if self.max is not None and self.max < self.min:
            raise WasmEncodingError(f"{what}: max {self.max} is below min {self.min}")
        if self.shared and self.max is None:
            raise WasmEncodingError(f"{what}: a shared memory needs a max")

    def text(self) -> str:
        """``min [max] [shared]`` as WAT writes limits."""
        out = str(self.min) if self.max is None else f"{self.min} {self.max}"
        return out + (" shared" if self.shared else "")


@dataclass(frozen=True, slots=True)
class TableType:
    """A table: its reference type and limits."""

    reftype: ValType
    limits: Limits

    def text(self) -> str:
        return f"{self.limits.text()} {self.reftype.text}"


@dataclass(frozen=True, slots=True)
class GlobalType:
    """A global's value type and mutability."""

    valtype: ValType
    mutable: bool = False

    def text(self) -> str:
        return f"(mut {self.valtype.text})" if self.mutable else self.valtype.text
