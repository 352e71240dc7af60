"""ModuleBuilder: assemble a WebAssembly module (types, imports, functions, memory, tables, globals, exports,
start, element and data segments) and write it with ``to_bytes()``.

Types are deduplicated. Imports of a kind must be declared before the
module's own items of that kind, because imports come first in each index
space. Functions, globals and locals may be named; names resolve in
``BodyWriter`` immediates (``w.call("helper")``, ``w.local_get("acc")``,
``w.global_get("sp")``) and go to the ``name`` section, which engines use in
backtraces and the disassembler prints.
"""

from __future__ import annotations

from typing import Callable

from ..errors import WasmEncodingError
from .body_writer import BodyWriter
from .instructions import Instruction, normalize_immediates, opcode_row
from .structure import (
    DataSegment, ElementSegment, Export, FunctionCode, Global, Import, Module, NameMap, SegmentMode,
)
from .types import (
    MAX_PAGES, ExternKind, FuncType, GlobalType, Limits, TableType, ValType, as_valtype,
)
from .writer import encode_module

__all__ = ["ModuleBuilder", "FunctionBuilder"]

_U32_LIMIT = (1 << 32) - 1

def _instruction(name: str, *immediates: object) -> Instruction:
    """A checked Instruction for constant expressions; raises WasmEncodingError."""
    return Instruction(name, normalize_immediates(opcode_row(name), immediates))


# the instruction that initialises a global of each type from a Python value
_GLOBAL_INIT: dict[ValType, Callable[[object], Instruction]] = {
    ValType.I32: lambda v: _instruction("i32.const", v),
    ValType.I64: lambda v: _instruction("i64.const", v),
    ValType.F32: lambda v: _instruction("f32.const", v),
    ValType.F64: lambda v: _instruction("f64.const", v),
    ValType.V128: lambda v: _instruction("v128.const", v),
    ValType.FUNCREF: lambda v: _instruction("ref.null", ValType.FUNCREF) if v is None else _instruction("ref.func", v),
    ValType.EXTERNREF: lambda v: _instruction("ref.null", ValType.EXTERNREF),
}


def _i32_offset(offset: object, what: str) -> tuple[Instruction, ...]:
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= _U32_LIMIT:
        raise WasmEncodingError(f"{what}: offset {offset!r} is not an int in 0..2**32-1")
    return (_instruction("i32.const", offset),)


class FunctionBuilder:
    """One function being defined: its ``index``, ``type``, locals and ``code`` (a BodyWriter).

    Parameters are locals 0 … len(params)-1; ``add_local`` appends more.
    """

    def __init__(self, index: int, type_index: int, functype: FuncType, name: str | None,
                 param_names: tuple[str | None, ...], resolvers: dict[str, Callable[[str], int]]) -> None:
        self.index = index
        self.type_index = type_index
        self.type = functype
        self.name = name
        self._local_types: list[ValType] = []
        self._local_names: dict[str, int] = {}
        for i, pname in enumerate(param_names):
            if pname is not None:
                self._name_local(pname, i)
        self.code = BodyWriter(resolvers={**resolvers, "localidx": self.local})

    def add_local(self, valtype: object, name: str | None = None) -> int:
        """Declare a local of ``valtype``; returns its index. Raises WasmEncodingError for a reused name."""
        index = len(self.type.params) + len(self._local_types)
        self._local_types.append(as_valtype(valtype, f"function {self.name or self.index}: local"))
        if name is not None:
            self._name_local(name, index)
        return index

    def local(self, name: str) -> int:
        """The index of the parameter or local called ``name``; raises WasmEncodingError."""
        try:
            return self._local_names[name]
        except KeyError:
            raise WasmEncodingError(
                f"function {self.name or self.index} has no local {name!r} (named: {sorted(self._local_names)})"
            ) from None

    @property
    def local_types(self) -> tuple[ValType, ...]:
        """Declared locals (parameters not included)."""
        return tuple(self._local_types)

    @property
    def local_names(self) -> dict[int, str]:
        return {index: name for name, index in self._local_names.items()}

    def to_code(self) -> FunctionCode:
        """The finished body; raises WasmEncodingError when blocks are still open."""
        runs: list[tuple[int, ValType]] = []
        for valtype in self._local_types:
            if runs and runs[-1][1] == valtype:
                runs[-1] = (runs[-1][0] + 1, valtype)
            else:
                runs.append((1, valtype))
        try:
            body = self.code.finish()
        except WasmEncodingError as exc:
            raise WasmEncodingError(f"function {self.name or self.index}: {exc.reason}") from None
        return FunctionCode(tuple(runs), body)

    def _name_local(self, name: str, index: int) -> None:
        if name in self._local_names:
            raise WasmEncodingError(f"function {self.name or self.index}: local name {name!r} is used twice")
        self._local_names[name] = index


class ModuleBuilder:
    """Builds one module. Every ``add_*``/``import_*`` returns the new item's index.

    Raises WasmEncodingError for bad arguments, reused names or exports, and
    imports declared after the module's own items of that kind.
    """

    def __init__(self, name: str | None = None) -> None:
        self._module = Module()
        self._module.names.module = name
        self._functions: list[FunctionBuilder] = []
        self._type_index: dict[FuncType, int] = {}
        self._function_names: dict[str, int] = {}
        self._global_names: dict[str, int] = {}
        self._export_names: set[str] = set()
        self._resolvers: dict[str, Callable[[str], int]] = {
            "funcidx": self.function_index, "globalidx": self.global_index,
        }

    # --- types and imports ---------------------------------------------------------------------------------

    def add_type(self, params: object = (), results: object = ()) -> int:
        """The index of the function type ``params -> results``, added once."""
        functype = FuncType.of(params, results)
        if functype not in self._type_index:
            self._type_index[functype] = len(self._module.types)
            self._module.types.append(functype)
        return self._type_index[functype]

    def import_function(self, module: str, name: str, params: object = (), results: object = (), *,
                        as_name: str | None = None) -> int:
        """Import a function; ``as_name`` names it inside this module (default ``module.name``)."""
        if self._functions:
            raise WasmEncodingError(f"import {module}.{name}: function imports must precede add_function")
        index = self._count(ExternKind.FUNC)
        self._add_import(Import(module, name, ExternKind.FUNC, self.add_type(params, results)))
        self._name_function(as_name or f"{module}.{name}", index)
        return index

    def import_memory(self, module: str, name: str, min_pages: int, max_pages: int | None = None, *,
                      shared: bool = False) -> int:
        """Import a linear memory of ``min_pages`` … ``max_pages`` 64 KiB pages."""
        if self._module.memories:
            raise WasmEncodingError(f"import {module}.{name}: memory imports must precede add_memory")
        limits = Limits(min_pages, max_pages, shared)
        limits.check(f"import {module}.{name}", MAX_PAGES)
        index = self._count(ExternKind.MEMORY)
        self._add_import(Import(module, name, ExternKind.MEMORY, limits))
        return index

    def import_global(self, module: str, name: str, valtype: object, *, mutable: bool = False,
                      as_name: str | None = None) -> int:
        if self._module.globals:
            raise WasmEncodingError(f"import {module}.{name}: global imports must precede add_global")
        index = self._count(ExternKind.GLOBAL)
        gtype = GlobalType(as_valtype(valtype, f"import {module}.{name}"), bool(mutable))
        self._add_import(Import(module, name, ExternKind.GLOBAL, gtype))
        self._name_global(as_name or f"{module}.{name}", index)
        return index

    # --- definitions ---------------------------------------------------------------------------------------

    def add_function(self, name: str | None = None, params: object = (), results: object = (), *,
                     export: bool | str = False, param_names: tuple[str | None, ...] = ()) -> FunctionBuilder:
        """Define a function; ``export=True`` exports it under ``name``, a str under that name."""
        type_index = self.add_type(params, results)
        functype = self._module.types[type_index]
        if len(param_names) > len(functype.params):
            raise WasmEncodingError(f"function {name}: {len(param_names)} parameter names for "
                                    f"{len(functype.params)} parameters")
        index = self._count(ExternKind.FUNC) + len(self._functions)
        builder = FunctionBuilder(index, type_index, functype, name, tuple(param_names), self._resolvers)
        if name is not None:
            self._name_function(name, index)
        self._functions.append(builder)
        self._export_if(export, name, ExternKind.FUNC, index, "function")
        return builder

    def add_memory(self, min_pages: int, max_pages: int | None = None, *, shared: bool = False,
                   export: str | None = None) -> int:
        """Define a linear memory of ``min_pages`` … ``max_pages`` 64 KiB pages."""
        limits = Limits(min_pages, max_pages, shared)
        limits.check("memory", MAX_PAGES)
        index = self._count(ExternKind.MEMORY) + len(self._module.memories)
        self._module.memories.append(limits)
        self._export_if(export, None, ExternKind.MEMORY, index, "memory")
        return index

    def add_table(self, min_size: int, max_size: int | None = None, *, reftype: object = ValType.FUNCREF,
                  export: str | None = None) -> int:
        index = self._count(ExternKind.TABLE) + len(self._module.tables)
        self._module.tables.append(self._tabletype(reftype, min_size, max_size, "table"))
        self._export_if(export, None, ExternKind.TABLE, index, "table")
        return index

    def add_global(self, valtype: object, value: object = 0, *, mutable: bool = False, name: str | None = None,
                   export: bool | str = False) -> int:
        """Define a global initialised to ``value`` (16 bytes for v128; None or a function index for funcref)."""
        vt = as_valtype(valtype, f"global {name or ''}".strip())
        if vt in (ValType.FUNCREF, ValType.EXTERNREF) and value == 0:
            value = None
        init = _GLOBAL_INIT[vt](value)
        index = self._count(ExternKind.GLOBAL) + len(self._module.globals)
        self._module.globals.append(Global(GlobalType(vt, bool(mutable)), (init,)))
        if name is not None:
            self._name_global(name, index)
        self._export_if(export, name, ExternKind.GLOBAL, index, "global")
        return index

    def add_export(self, name: str, kind: ExternKind, index: int) -> None:
        """Export item ``index`` of ``kind`` as ``name``; raises WasmEncodingError for a reused name."""
        if not isinstance(name, str) or name in self._export_names:
            raise WasmEncodingError(f"export name {name!r} is not a str or is already used")
        self._export_names.add(name)
        self._module.exports.append(Export(name, ExternKind(kind), int(index)))

    def set_start(self, function: int | str) -> None:
        """Run ``function`` (index or name; no parameters, no results) at instantiation."""
        self._module.start = self.function_index(function) if isinstance(function, str) else function

    def add_elements(self, functions: list[int | str], *, offset: int | None = 0, table: int = 0,
                     declarative: bool = False) -> int:
        """An element segment of function references: active at ``offset`` of ``table``, passive when
        ``offset`` is None, or declarative (only declares functions for ``ref.func``)."""
        indices = tuple(self.function_index(f) if isinstance(f, str) else f for f in functions)
        if declarative:
            segment = ElementSegment(SegmentMode.DECLARATIVE, indices)
        elif offset is None:
            segment = ElementSegment(SegmentMode.PASSIVE, indices)
        else:
            segment = ElementSegment(SegmentMode.ACTIVE, indices, table, _i32_offset(offset, "element segment"))
        self._module.elements.append(segment)
        return len(self._module.elements) - 1

    def add_data(self, data: bytes | bytearray | memoryview, *, offset: int | None = None, memory: int = 0) -> int:
        """A data segment: copied to ``offset`` of ``memory`` at instantiation, or passive when offset is None
        (for ``memory.init``). The bytes are copied."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise WasmEncodingError(f"data segment must be bytes, got {type(data).__name__}")
        if offset is None:
            segment = DataSegment(SegmentMode.PASSIVE, bytes(data))
        else:
            segment = DataSegment(SegmentMode.ACTIVE, bytes(data), memory, _i32_offset(offset, "data segment"))
        self._module.data.append(segment)
        return len(self._module.data) - 1

    # --- lookups -------------------------------------------------------------------------------------------

    def function_index(self, name: str) -> int:
        """Index of the function (imported or defined) called ``name``; raises WasmEncodingError."""
        try:
            return self._function_names[name]
        except KeyError:
            raise WasmEncodingError(f"no function is named {name!r} (known: {sorted(self._function_names)})") from None

    def global_index(self, name: str) -> int:
        """Index of the global called ``name``; raises WasmEncodingError."""
        try:
            return self._global_names[name]
        except KeyError:
            raise WasmEncodingError(f"no global is named {name!r} (known: {sorted(self._global_names)})") from None

    @property
    def functions(self) -> tuple[FunctionBuilder, ...]:
        """The defined functions, in index order."""
        return tuple(self._functions)

    # --- output --------------------------------------------------------------------------------------------

    def build(self) -> Module:
        """The module structure (a fresh copy); raises WasmEncodingError for unfinished bodies or bad indices."""
        module = self._module
        total_functions = self._count(ExternKind.FUNC) + len(self._functions)
        if module.start is not None and not 0 <= module.start < total_functions:
            raise WasmEncodingError(f"start function {module.start} does not exist ({total_functions} functions)")
        counts = {kind: self._count(kind) for kind in ExternKind}
        counts[ExternKind.FUNC] = total_functions
        counts[ExternKind.MEMORY] += len(module.memories)
        counts[ExternKind.TABLE] += len(module.tables)
        counts[ExternKind.GLOBAL] += len(module.globals)
        for export in module.exports:
            if not 0 <= export.index < counts[export.kind]:
                raise WasmEncodingError(f"export {export.name!r} names {export.kind.text} {export.index}, "
                                        f"but there are {counts[export.kind]}")
        names = NameMap(module.names.module, {i: n for n, i in self._function_names.items()},
                        {fb.index: fb.local_names for fb in self._functions if fb.local_names},
                        {i: n for n, i in self._global_names.items()})
        return Module(
            types=list(module.types), imports=list(module.imports), functions=[f.type_index for f in self._functions],
            tables=list(module.tables), memories=list(module.memories), globals=list(module.globals),
            exports=list(module.exports), start=module.start, elements=list(module.elements),
            data_count=len(module.data) if module.data else None, codes=[f.to_code() for f in self._functions],
            data=list(module.data), names=names,
        )

    def to_bytes(self) -> bytes:
        """The module's binary form (see ``build``)."""
        return encode_module(self.build())

    # --- helpers -------------------------------------------------------------------------------------------

    def _count(self, kind: ExternKind) -> int:
        return sum(1 for imp in self._module.imports if imp.kind == kind)

    def _add_import(self, imp: Import) -> None:
        if not isinstance(imp.module, str) or not isinstance(imp.name, str):
            raise WasmEncodingError(f"import module and name must be str, got {imp.module!r}, {imp.name!r}")
        self._module.imports.append(imp)

    def _tabletype(self, reftype: object, min_size: int, max_size: int | None, what: str) -> TableType:
        rt = as_valtype(reftype, what)
        if rt not in (ValType.FUNCREF, ValType.EXTERNREF):
            raise WasmEncodingError(f"{what}: {rt.text} is not a reference type")
        limits = Limits(min_size, max_size)
        limits.check(what, _U32_LIMIT)
        return TableType(rt, limits)

    def _name_function(self, name: str, index: int) -> None:
        if name in self._function_names:
            raise WasmEncodingError(f"function name {name!r} is used twice")
        self._function_names[name] = index

    def _name_global(self, name: str, index: int) -> None:
        if name in self._global_names:
            raise WasmEncodingError(f"global name {name!r} is used twice")
        self._global_names[name] = index

    def _export_if(self, export: bool | str | None, name: str | None, kind: ExternKind, index: int,
                   what: str) -> None:
        if export is True:
            if name is None:
                raise WasmEncodingError(f"export=True needs a named {what}; pass export='name'")
            self.add_export(name, kind, index)
        elif isinstance(export, str):
            self.add_export(export, kind, index)
