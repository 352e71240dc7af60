"""A WAT-like listing of a module, decoded with the same instruction table the encoder uses.

The listing follows the text format closely (``(func $add (;0;) (type 0)
(param $a i32) ...``, one instruction per line, nested blocks indented) but is
meant for reading, not for re-assembly: branch targets get a ``(;@N;)``
comment naming the block they leave, and named locals, functions and globals
are printed by name (``local.get $acc``).
"""

from __future__ import annotations

from .immediates import IMMEDIATE_CODECS
from .instructions import Instruction, iter_instructions
from .reader import decode_module
from .structure import DataSegment, ElementSegment, FunctionCode, Module, SegmentMode
from .types import ExternKind, FuncType

__all__ = ["disassemble", "function_listing"]

_INDENT = "  "
_OPENERS = frozenset({"block", "loop", "if"})
_MAX_DATA_SHOWN = 256


def _ident(name: str) -> str:
    return "$" + "".join(c if c.isalnum() or c in "_.-+*/\\^~=<>!?@#$%&|:'`" else "_" for c in name)


def _expr(instructions: tuple[Instruction, ...]) -> str:
    return " ".join(f"({_instruction_text(i, {})})" for i in instructions)


def _instruction_text(instr: Instruction, names: dict[str, dict[int, str]], depth: int = 0) -> str:
    row = instr.row
    parts = [row.text_name]
    for kind, value in zip(row.immediates, instr.immediates):
        named = names.get(kind, {})
        if isinstance(value, int) and value in named:
            parts.append(_ident(named[value]))
            continue
        text = IMMEDIATE_CODECS[kind].text(value)
        if kind == "labelidx":
            text += f" (;@{depth - value};)"
        if text:
            parts.append(text)
    return " ".join(parts)


def _signature(functype: FuncType, param_names: dict[int, str]) -> str:
    parts = []
    run: list[str] = []
    for index, valtype in enumerate(functype.params):
        if index in param_names:
            if run:
                parts.append("(param " + " ".join(run) + ")")
                run = []
            parts.append(f"(param {_ident(param_names[index])} {valtype.text})")
        else:
            run.append(valtype.text)
    if run:
        parts.append("(param " + " ".join(run) + ")")
    if functype.results:
        parts.append("(result " + " ".join(t.text for t in functype.results) + ")")
    return " ".join(parts)


def _locals_lines(code: FunctionCode, first_index: int, names: dict[int, str]) -> list[str]:
    out = []
    for offset, valtype in enumerate(code.local_types):
        index = first_index + offset
        out.append(f"(local {_ident(names[index])} {valtype.text})" if index in names else f"(local {valtype.text})")
    return out


def _body_lines(code: FunctionCode, names: dict[str, dict[int, str]]) -> list[str]:
    lines = []
    depth = 0  # open blocks; the function body itself is @0
    instructions = list(iter_instructions(code.body))
    for instr in instructions[:-1]:  # the last one is the function's own end
        if instr.name in ("end", "else"):
            depth -= 1
        text = _instruction_text(instr, names, depth)
        if instr.name in _OPENERS or instr.name == "else":
            depth += 1
            text += f"  ;; label = @{depth}"
        lines.append(_INDENT * (depth + (0 if instr.name in _OPENERS or instr.name == "else" else 1)) + text)
    return lines


def function_listing(module: Module, func_index: int) -> str:
    """The ``(func ...)`` listing of defined function ``func_index`` (imports counted), without indentation."""
    imported = len(module.imported(ExternKind.FUNC))
    code = module.codes[func_index - imported]
    functype = module.function_type(func_index)
    local_names = module.names.locals.get(func_index, {})
    head = "(func"
    if func_index in module.names.functions:
        head += " " + _ident(module.names.functions[func_index])
    head += f" (;{func_index};) (type {module.functions[func_index - imported]})"
    signature = _signature(functype, local_names)
    lines = [head + (" " + signature if signature else "")]
    lines += [_INDENT + line for line in _locals_lines(code, len(functype.params), local_names)]
    names = {"localidx": local_names, "funcidx": module.names.functions, "globalidx": module.names.globals}
    lines += _body_lines(code, names)
    lines.append(")")
    return "\n".join(lines)


def _quote(data: bytes) -> str:
    shown = data[:_MAX_DATA_SHOWN]
    text = "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02x}" for b in shown)
    more = f" ;; {len(data)} bytes, first {_MAX_DATA_SHOWN} shown" if len(data) > _MAX_DATA_SHOWN else ""
    return f'"{text}"{more}'


def _element_text(index: int, seg: ElementSegment) -> str:
    funcs = " ".join(map(str, seg.functions))
    if seg.mode is SegmentMode.ACTIVE:
        table = f"(table {seg.table}) " if seg.table else ""
        return f"(elem (;{index};) {table}{_expr(seg.offset or ())} func {funcs})"
    declare = "declare " if seg.mode is SegmentMode.DECLARATIVE else ""
    return f"(elem (;{index};) {declare}func {funcs})"


def _data_text(index: int, seg: DataSegment) -> str:
    if seg.mode is SegmentMode.ACTIVE:
        memory = f"(memory {seg.memory}) " if seg.memory else ""
        return f"(data (;{index};) {memory}{_expr(seg.offset or ())} {_quote(seg.data)})"
    return f"(data (;{index};) {_quote(seg.data)})"


def _import_text(module: Module, kind_index: int, imp) -> str:
    desc = imp.desc
    texts = {
        ExternKind.FUNC: lambda: f"(func (;{kind_index};) (type {desc}) {module.types[desc].text()})"
                                 .replace(" )", ")"),
        ExternKind.TABLE: lambda: f"(table (;{kind_index};) {desc.text()})",
        ExternKind.MEMORY: lambda: f"(memory (;{kind_index};) {desc.text()})",
        ExternKind.GLOBAL: lambda: f"(global (;{kind_index};) {desc.text()})",
    }
    return f'(import "{imp.module}" "{imp.name}" {texts[imp.kind]()})'


def disassemble(wasm: bytes | bytearray | memoryview | Module) -> str:
    """The WAT-like listing of a module given as bytes or as a decoded Module.

    Raises WasmDecodeError for malformed bytes.
    """
    module = wasm if isinstance(wasm, Module) else decode_module(wasm)
    lines = []
    for index, functype in enumerate(module.types):
        lines.append(f"(type (;{index};) (func {functype.text()}))".replace(" )", ")"))
    seen = {kind: 0 for kind in ExternKind}
    for imp in module.imports:
        lines.append(_import_text(module, seen[imp.kind], imp))
        seen[imp.kind] += 1
    imported_functions = seen[ExternKind.FUNC]
    for offset in range(len(module.codes)):
        lines += function_listing(module, imported_functions + offset).split("\n")
    for offset, table in enumerate(module.tables):
        lines.append(f"(table (;{seen[ExternKind.TABLE] + offset};) {table.text()})")
    for offset, limits in enumerate(module.memories):
        lines.append(f"(memory (;{seen[ExternKind.MEMORY] + offset};) {limits.text()})")
    for offset, glob in enumerate(module.globals):
        lines.append(f"(global (;{seen[ExternKind.GLOBAL] + offset};) {glob.type.text()} {_expr(glob.init)})")
    for export in module.exports:
        lines.append(f'(export "{export.name}" ({export.kind.text} {export.index}))')
    if module.start is not None:
        lines.append(f"(start {module.start})")
    lines += [_element_text(i, seg) for i, seg in enumerate(module.elements)]
    lines += [_data_text(i, seg) for i, seg in enumerate(module.data)]
    header = "(module" + (" " + _ident(module.names.module) if module.names.module else "")
    return "\n".join([header] + [_INDENT + line for line in lines] + [")"])

