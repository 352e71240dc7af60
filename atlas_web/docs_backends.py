"""Generates docs/backends.md: the op x type x backend support matrix and each backend's measured accuracy.

``python -m atlas_web.docs_backends > docs/backends.md`` rewrites it; tests/test_docs_backends.py
checks that the file equals ``render_backends_md()``. Nothing here is written per backend: every
backend contributes its own section through the documentation hook of the Backend protocol,
``Backend.documentation()`` (a classmethod: documenting needs no device), which returns a
``BackendDocumentation`` built from the backend's own rule tables and measured ulp table, never a
hand-written list. The generator asks every registered backend whose class loads
(``atlas_web.registry``), in registration order; a backend whose hook returns None gets no column.
Cells list the backends that compile the instruction (or cooperative operation) for the type.

Nothing here runs a program; measurements come from each backend's table (``python -m
atlas_web.accuracy <backend>`` measures any backend against the reference). Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .accuracy import OPERATION_OWNERS
from .isa.opcodes import OPCODE_TABLE, OpcodeInfo
from .isa.operations import COOPERATIVE_OPERATION_TYPES
from .isa.types import Type

__all__ = ["BackendDocumentation", "collect_documentation", "render_backends_md", "main"]

_TYPES = sorted(Type, key=lambda t: t.code)
#: (instruction, its operation enum) for the cooperative operation rows
_OPERATIONS = tuple((owner, enum) for enum, owner in OPERATION_OWNERS.items())


@dataclass(frozen=True)
class BackendDocumentation:
    """What docs/backends.md says about one backend (``Backend.documentation()`` returns it).

    ``letter`` marks the backend in the matrix; ``supports(info, ty)`` and ``supports_operation(operation, ty)``
    answer from its rule tables as its ``supports_op``/``supports_operation`` do; ``ulps`` is its measured
    table; ``notes`` are the bullets of its section; ``unsupported`` names the rows or operation keys it
    does not run by design, each with the reason, and ``unsupported_types`` the types it runs no instruction
    on (listed under its section). Every (row, type) the backend does not support must be in one of them
    (tests/test_support_documented.py asks each available backend).
    """

    name: str
    letter: str
    supports: Callable[[OpcodeInfo, Type | None], bool]
    supports_operation: Callable[[object, Type], bool]
    #: (operation key, type name) -> measured largest error in ulps (absent: bit-exact)
    ulps: Mapping[tuple[str, str], float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: operation key (instruction name or "Instruction.Operation") -> why this backend does not run it
    unsupported: Mapping[str, str] = field(default_factory=dict)
    #: Type -> why this backend runs no instruction on it
    unsupported_types: Mapping[Type, str] = field(default_factory=dict)


def collect_documentation() -> list[BackendDocumentation]:
    """Every registered backend's ``documentation()``, in registration order (skipping classes that do
    not load, such as a backend whose package is missing, and hooks that return None)."""
    from .errors import BackendUnavailable
    from .registry import load_backend_class, registered_backends
    out = []
    for name in registered_backends():
        try:
            cls = load_backend_class(name)
        except BackendUnavailable:
            continue
        doc = cls.documentation()
        if doc is not None:
            out.append(doc)
    return out


def _cell(docs: list[BackendDocumentation], ask: Callable[[BackendDocumentation], bool]) -> str:
    letters = "".join(d.letter for d in docs if ask(d))
    return letters or "–"


def _matrix(docs: list[BackendDocumentation]) -> list[str]:
    header = "| instruction | " + " | ".join(t.suffix for t in _TYPES) + " | untyped |"
    lines = [header, "|" + "---|" * (len(_TYPES) + 2)]
    for info in OPCODE_TABLE:
        cells = []
        for ty in _TYPES:
            cells.append(_cell(docs, lambda d, ty=ty, info=info: d.supports(info, ty)) if ty in info.types else " ")
        untyped = _cell(docs, lambda d, info=info: d.supports(info, None)) if not info.types else " "
        lines.append(f"| {info.name} | " + " | ".join(cells) + f" | {untyped} |")
    for name, enum in _OPERATIONS:
        for operation in enum:
            accepted = COOPERATIVE_OPERATION_TYPES[operation]
            cells = [_cell(docs, lambda d, ty=ty, op=operation: d.supports_operation(op, ty)) if ty in accepted
                     else " " for ty in _TYPES]
            lines.append(f"| {name}.{operation.name} | " + " | ".join(cells) + " |   |")
    return lines


def _compiles(doc: BackendDocumentation, op: str, ty: Type) -> bool:
    """Whether ``doc``'s backend compiles ``op`` (an instruction or "Instruction.Operation") for ``ty``."""
    from atlas_web.isa.instructions import INSTRUCTION_CLASSES
    if "." in op:
        instruction, name = op.split(".")
        enum = dict(_OPERATIONS)[instruction]
        return doc.supports_operation(enum[name], ty)
    return doc.supports(INSTRUCTION_CLASSES[op].INFO, ty)


def _ulp_text(value: float) -> str:
    if math.isinf(value):
        return "∞"
    return f"{value:g}"


def _accuracy(doc: BackendDocumentation) -> list[str]:
    lines = [f"### {doc.name}", ""]
    lines += [f"- {note}" for note in doc.notes]
    lines.append("")
    if doc.unsupported or doc.unsupported_types:
        lines.append("Not supported, by design:")
        lines.append("")
        lines += [f"- every instruction on {ty.suffix}: {why}"
                  for ty, why in sorted(doc.unsupported_types.items(), key=lambda item: item[0].code)]
        lines += [f"- {op}: {why}" for op, why in sorted(doc.unsupported.items())]
        lines.append("")
    if not doc.ulps:
        lines.append("Every operation was measured bit-exact against the reference.")
        return lines
    lines.append("Operations not listed were measured bit-exact. Largest error seen, in ulps of the type:")
    lines.append("")
    lines.append("| operation | " + " | ".join(t.suffix for t in _TYPES if t.is_float()) + " |")
    lines.append("|---|" + "---|" * sum(1 for t in _TYPES if t.is_float()))
    for op in sorted({op for op, _ty in doc.ulps}):
        cells = [_ulp_text(doc.ulps[(op, t.name)]) if (op, t.name) in doc.ulps
                 else ("0" if _compiles(doc, op, t) else "–") for t in _TYPES if t.is_float()]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return lines


def render_backends_md(docs: list[BackendDocumentation] | None = None) -> str:
    """The text of docs/backends.md."""
    docs = collect_documentation() if docs is None else docs
    legend = ", ".join(f"`{d.letter}` {d.name}" for d in docs)
    lines = [
        "# Backends: what each one runs, and how accurately",
        "",
        "<!-- Generated by `python -m atlas_web.docs_backends > docs/backends.md`; do not edit by hand. -->",
        "",
        "## Support matrix",
        "",
        f"A cell lists the backends that compile the instruction (or cooperative operation) for the type: {legend}.",
        "A blank cell: the opcode table does not accept that type; `–`: no backend compiles it. A backend that",
        "does not support a pair raises `UnsupportedOperation` when a program needs it.",
        "",
        *_matrix(docs),
        "",
        "## Measured accuracy",
        "",
        "Errors are measured against the reference over edge values, random values of several scales and",
        "random bit patterns of each type (NaN equals NaN; an infinity only itself). The conformance suite",
        "uses these figures as each backend's tolerance.",
        "",
    ]
    for doc in docs:
        lines += _accuracy(doc)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    print(render_backends_md(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
