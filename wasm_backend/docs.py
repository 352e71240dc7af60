"""Generates docs/backends.md: the op x type x backend support matrix and each backend's measured accuracy.

``python -m wasm_backend.docs > docs/backends.md`` rewrites it; tests/wasm_backend/test_docs_backends.py
checks that the file equals ``render_backends_md()``. The matrix is built from the backends' own
rule tables, never from a hand-written list:

* each backend package may offer ``<package>.docs.backend_documentation()`` returning a
  ``BackendDocumentation`` (its ``supports``/``supports_operation`` answer from its rule tables, its
  measured ulp table, notes). The generator asks every built-in and registered backend whose class
  loads (``atlas_web.registry``), in registration order; the reference ("cpu") runs every row exactly
  by definition. A backend without a ``docs`` module gets no column;
* cells list the backends that compile the instruction (or cooperative operation) for the type.

Nothing here runs a program; measurements come from each backend's table (for wasm:
``python -m wasm_backend.measure_ulp``).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

from atlas_web.isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from atlas_web.isa.opcodes import COOPERATIVE_OPERATION_TYPES, OPCODE_TABLE, ExecKind, OpcodeInfo
from atlas_web.isa.types import Type

__all__ = ["BackendDocumentation", "backend_documentation", "collect_documentation", "render_backends_md", "main"]

_TYPES = sorted(Type, key=lambda t: t.code)
_OPERATIONS = (("ParallelMap", MapOperation), ("ParallelMapBinary", BinaryMapOperation),
               ("ParallelReduce", ReduceOperation))


@dataclass(frozen=True)
class BackendDocumentation:
    """What docs/backends.md says about one backend: ``letter`` marks it in the matrix."""

    name: str
    letter: str
    supports: Callable[[OpcodeInfo, Type | None], bool]
    supports_operation: Callable[[object, Type], bool]
    #: (operation key, type name) -> measured largest error in ulps (absent: bit-exact)
    ulps: Mapping[tuple[str, str], float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def backend_documentation() -> BackendDocumentation:
    """The wasm backend's entry, from its rule tables and measured ulp table."""
    from .lowering import COOPERATIVE_RULES, COOPERATIVE_SUPPORT, lane_supported, map_operation_supported
    from .ulp_table import MEASURED_ULPS

    def supports(info: OpcodeInfo, ty: Type | None) -> bool:
        if info.kind is ExecKind.COOPERATIVE:
            return info.name in COOPERATIVE_RULES and (ty is None) == (not info.types)
        return (ty is None if not info.types else ty in info.types) and lane_supported(info.name, ty)

    def supports_operation(operation: object, ty: Type) -> bool:
        if isinstance(operation, ReduceOperation):
            return ty in COOPERATIVE_SUPPORT.get(operation, ())
        return map_operation_supported(operation, ty)

    notes = (
        "Compiled to WebAssembly with SIMD128 and run by wasmtime (natively) or the browser's engine. Lane code "
        "follows the shared lowering plan; straight-line programs whose instructions all have SIMD rules run four "
        "lanes per step (SIMD lane mode), the rest one lane at a time.",
        "Transcendentals come from the vectorized math library (`wasm_backend.mathlib`); F16/BF16 use its F32 "
        "functions and round once to their format.",
        "ParallelReduce sums F32 in blocks: each lane of four f32x4 accumulators adds 32 values in f32, then the "
        "block is added exactly into binary64 accumulators (error at most 32 eps times the sum of magnitudes, "
        "like NumPy's pairwise sum, far inside the contract's bound; a block with cancellation such as "
        "2**24 + 1 - 2**24 loses its ones, as NumPy's does); F64, F16 and BF16 add every value in binary64. "
        "Fixed 64K-element chunks combined in order give the same bits on every thread count and in the "
        "browser. A sum whose result is not finite (an infinity or NaN among the values, or partials past "
        "the range) is summed again in one thread, magnitudes of 2**512 and more scaled by 2**-512 apart, so "
        "overflowing partials never give NaN or an infinity the values do not have. Products run in binary64 "
        "in index order (bit-exact with the reference).",
        "FMA/FMS on F64 round once: Boldo and Melquiond's emulation inside its proved exponent window, and "
        "outside it the same core on operands scaled by exact powers of two, with subnormal results rounded "
        "once to the subnormal grid.",
    )
    return BackendDocumentation("wasm", "w", supports, supports_operation, dict(MEASURED_ULPS), notes)


def _reference_documentation() -> BackendDocumentation:
    return BackendDocumentation(
        "cpu", "c", lambda info, ty: (ty is None) == (not info.types) and (ty is None or ty in info.types),
        lambda operation, ty: ty in COOPERATIVE_OPERATION_TYPES[operation], {},
        ("The reference (NumPy): the executable specification; exact by definition.",))


def collect_documentation() -> list[BackendDocumentation]:
    """The reference, then every registered backend whose package has a ``docs`` module."""
    from atlas_web.registry import load_backend_class, registered_backends
    from atlas_web.errors import BackendUnavailable
    out = [_reference_documentation()]
    for name in registered_backends():
        if name == "cpu":
            continue
        try:
            package = load_backend_class(name).__module__.split(".")[0]
            module = importlib.import_module(f"{package}.docs")
        except (BackendUnavailable, ImportError):
            continue
        provider = getattr(module, "backend_documentation", None)
        if callable(provider):
            out.append(provider())
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
        "<!-- Generated by `python -m wasm_backend.docs > docs/backends.md`; do not edit by hand. -->",
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
