"""The runner interface on wasmtime: modules from ModuleBuilder validate and run; traps, budgets, memory."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from atlas_web.errors import AllocationFailed, BackendUnavailable, InvalidBuffer, TrapCode, UnsupportedOperation
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import PAGE_SIZE, ExternKind, ValType
from wasm_backend.errors import WasmInterfaceError, WasmTrap, WasmTrapKind, WasmValidationError
from wasm_backend.runners import create_runner
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner

from .modules import add_module, host_module, memory_module, trap_module


@pytest.fixture(scope="module")
def compiled_memory_module(runner):
    return runner.compile(memory_module(1, 64))


@pytest.fixture(scope="module")
def traps(runner):
    return runner.instantiate(runner.compile(trap_module()))


def test_add_runs(runner):
    instance = runner.instantiate(runner.compile(add_module()))
    assert runner.call(instance, "add", 2, 40) == 42
    assert runner.call(instance, "add", 0xFFFFFFFF, 1) == 0  # unsigned spelling wraps, results come back signed
    assert runner.call(instance, "add", 2**31 - 1, 1) == -(2**31)
    assert instance.memory is None


def test_compile_describes_imports_and_exports(runner, compiled_memory_module):
    (memory_import,) = compiled_memory_module.imports
    assert (memory_import.module, memory_import.name, memory_import.kind) == ("env", "memory", ExternKind.MEMORY)
    assert (memory_import.limits.min, memory_import.limits.max) == (1, 64)
    add = compiled_memory_module.export("vadd_f32x4")
    assert add.kind == ExternKind.FUNC and add.functype.params == (ValType.I32,) * 4
    with pytest.raises(WasmInterfaceError, match="no export 'nope'"):
        compiled_memory_module.export("nope")


def test_loop_sums_memory(runner, compiled_memory_module):
    instance = runner.instantiate(compiled_memory_module)
    values = np.arange(-500, 1500, dtype=np.int32)
    runner.write_memory(instance, 64, values.tobytes())
    assert runner.call(instance, "sum_i32", 64, len(values)) == int(values.sum())


def test_f32x4_add_over_memory_matches_numpy(runner, compiled_memory_module):
    instance = runner.instantiate(compiled_memory_module, memory_pages=4)
    n = 20000
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    view = runner.memory_view(instance, np.float32)
    view[:n], view[n:2 * n] = a, b
    runner.call(instance, "vadd_f32x4", 0, 4 * n, 8 * n, 4 * n)
    np.testing.assert_array_equal(runner.read_array(instance, np.float32, 8 * n, n), a + b)
    np.testing.assert_array_equal(view[2 * n:3 * n], a + b)  # the zero-copy view sees the stores


def test_relaxed_madd(runner, compiled_memory_module):
    instance = runner.instantiate(compiled_memory_module)
    a = np.array([1.5, -2.0, 1e-3, 3.0], np.float32)
    b = np.array([2.0, 0.25, 1e3, 1.0 + 2**-23], np.float32)
    c = np.array([0.5, 1.0, -1.0, -3.0], np.float32)
    for i, array in enumerate((a, b, c)):
        runner.write_memory(instance, 16 * i, array.tobytes())
    runner.call(instance, "madd_f32x4", 0, 16, 32, 48)
    result = runner.read_array(instance, np.float32, 48, 4)
    fused = (a.astype(np.float64) * b + c).astype(np.float32)
    unfused = a * b + c
    assert all(r in (f, u) for r, f, u in zip(result, fused, unfused))
    assert result[0] == 3.5 and result[1] == 0.5


def test_memory_grow_from_host_and_wasm(runner, compiled_memory_module):
    instance = runner.instantiate(compiled_memory_module, memory_pages=1, max_pages=4)
    assert runner.memory_pages(instance) == 1 and runner.call(instance, "size") == 1
    runner.write_memory(instance, 100, b"\x2a\x00\x00\x00")
    assert runner.grow_memory(instance, 1) == 1
    assert runner.call(instance, "grow", 1) == 2          # memory.grow in wasm returns the old size
    assert runner.call(instance, "grow", 5) == -1         # past the maximum: -1, nothing changes
    assert runner.memory_size(instance) == 3 * PAGE_SIZE
    view = runner.memory_view(instance, np.int32)          # taken again after growing
    assert view.size == 3 * PAGE_SIZE // 4 and view[25] == 42
    view[-1] = 99
    assert runner.call(instance, "load_at", 3 * PAGE_SIZE - 8) == 99
    with pytest.raises(AllocationFailed, match="maximum of 4 pages"):
        runner.grow_memory(instance, 2)


def test_instances_share_a_memory(runner, compiled_memory_module):
    memory = runner.create_memory(1, 2)
    first = runner.instantiate(compiled_memory_module, memory=memory)
    second = runner.instantiate(compiled_memory_module, imports={"env": {"memory": memory}})
    runner.write_memory(first, 0, np.arange(4, dtype=np.int32).tobytes())
    assert runner.call(second, "sum_i32", 0, 4) == 6
    assert first.memory is second.memory is memory


@pytest.mark.parametrize("export, args, kind, atlas_code", [
    ("boom", (), WasmTrapKind.UNREACHABLE, None),
    ("div", (1, 0), WasmTrapKind.INTEGER_DIVIDE_BY_ZERO, TrapCode.DIVISION_BY_ZERO),
    ("div", (-(2**31), -1), WasmTrapKind.INTEGER_OVERFLOW, TrapCode.INTEGER_OVERFLOW),
    ("to_int", (float("nan"),), WasmTrapKind.INVALID_CONVERSION_TO_INTEGER, None),
    ("poke", (PAGE_SIZE - 2,), WasmTrapKind.MEMORY_OUT_OF_BOUNDS, TrapCode.OUT_OF_BOUNDS),
    ("recurse", (), WasmTrapKind.STACK_OVERFLOW, None),
])
def test_traps_surface_with_their_kind(runner, traps, export, args, kind, atlas_code):
    with pytest.raises(WasmTrap) as info:
        runner.call(traps, export, *args)
    trap = info.value
    assert (trap.kind, trap.atlas_code, trap.engine, trap.export) == (kind, atlas_code, "wasmtime", export)
    assert trap.engine_message
    assert runner.call(traps, "div", 7, 2) == 3  # the instance and the runner stay usable


def test_trap_pickles():
    trap = WasmTrap(WasmTrapKind.UNREACHABLE, engine="wasmtime", engine_message="wasm trap", export="f")
    copy = pickle.loads(pickle.dumps(trap))
    assert (copy.kind, copy.engine, copy.engine_message, copy.export, str(copy)) == (
        trap.kind, trap.engine, trap.engine_message, trap.export, str(trap))


def test_fuel_stops_a_runaway_loop_and_the_runner_stays_usable(runner, traps):
    with pytest.raises(WasmTrap) as info:
        runner.call(traps, "spin", budget=200_000)
    assert info.value.kind is WasmTrapKind.BUDGET_EXHAUSTED
    assert info.value.atlas_code is TrapCode.BUDGET_EXCEEDED
    assert runner.call(traps, "countdown", 10_000) == 0          # no budget given: unlimited
    assert runner.call(traps, "countdown", 1000, budget=100_000) == 0
    with pytest.raises(WasmTrap, match="budget exhausted"):
        runner.call(traps, "countdown", 1_000_000, budget=100_000)
    runner.write_memory(traps, 0, b"\x01")                        # memory is still reachable after the trap


def test_default_budget_applies_to_every_call():
    bounded = WasmtimeRunner(default_budget=50_000)
    instance = bounded.instantiate(bounded.compile(trap_module()))
    with pytest.raises(WasmTrap) as info:
        bounded.call(instance, "spin")
    assert info.value.kind is WasmTrapKind.BUDGET_EXHAUSTED
    assert bounded.call(instance, "countdown", 100) == 0
    assert bounded.call(instance, "countdown", 100_000, budget=10**7) == 0


def test_unbudgeted_runner_refuses_budgets():
    free = WasmtimeRunner(budgeted=False)
    instance = free.instantiate(free.compile(trap_module()))
    assert not free.supports_budget
    assert free.call(instance, "countdown", 1000) == 0
    with pytest.raises(UnsupportedOperation, match="budget"):
        free.call(instance, "countdown", 1, budget=10)
    with pytest.raises(WasmInterfaceError, match="default_budget needs budgeted=True"):
        WasmtimeRunner(budgeted=False, default_budget=5)


def test_host_functions_are_called_and_their_exceptions_propagate(runner):
    module = runner.compile(host_module())
    notes = []
    instance = runner.instantiate(module, imports={"host": {"twice": lambda x: 2 * x, "note": notes.append}})
    assert runner.call(instance, "quad", 5) == 20 and notes == [2.5]

    class Stop(Exception):
        pass

    def refuse(x):
        raise Stop(x)

    failing = runner.instantiate(module, imports={"host": {"twice": refuse, "note": notes.append}})
    with pytest.raises(Stop):
        runner.call(failing, "quad", 1)


@pytest.mark.parametrize("call, message", [
    (lambda r, i: r.call(i, "add", 1), "takes 2 argument"),
    (lambda r, i: r.call(i, "add", 1, 2.5), "parameter 1 is i32"),
    (lambda r, i: r.call(i, "add", 1, 2**32), "does not fit"),
    (lambda r, i: r.call(i, "add", True, 1), "parameter 0 is i32"),
    (lambda r, i: r.call(i, "missing"), "no export 'missing'"),
    (lambda r, i: r.call(i, "add", 1, 2, budget=-1), "budget must be an int"),
])
def test_bad_calls_are_refused(runner, call, message):
    instance = runner.instantiate(runner.compile(add_module()))
    with pytest.raises(WasmInterfaceError, match=message):
        call(runner, instance)


def test_bad_instantiations_are_refused(runner, compiled_memory_module):
    with pytest.raises(WasmInterfaceError, match="needs a Python callable in imports\\['host'\\]\\['twice'\\]"):
        runner.instantiate(runner.compile(host_module()))
    with pytest.raises(WasmInterfaceError, match="only to a module that imports its memory"):
        runner.instantiate(runner.compile(add_module()), memory_pages=2)
    with pytest.raises(WasmInterfaceError, match="exceeds the module's declared maximum of 64"):
        runner.instantiate(compiled_memory_module, max_pages=100)
    with pytest.raises(WasmInterfaceError, match="below the module's minimum"):
        runner.instantiate(runner.compile(memory_module(2)), memory_pages=1)
    with pytest.raises(WasmInterfaceError, match="not both"):
        runner.instantiate(compiled_memory_module, memory=runner.create_memory(1), memory_pages=1)
    with pytest.raises(WasmInterfaceError, match="CompiledModule"):
        runner.instantiate(add_module())


def test_invalid_modules_are_refused(runner):
    with pytest.raises(WasmValidationError, match="wasmtime rejected the module"):
        runner.compile(b"\x00asm\x01\x00\x00\x00\x01")
    mb = ModuleBuilder()
    mb.add_function("bad", [], [ValType.I32]).code.i32_add()  # pops two values that are not there
    wasm = mb.to_bytes()
    with pytest.raises(WasmValidationError) as info:
        runner.validate(wasm)
    assert "type mismatch" in info.value.engine_message
    with pytest.raises(WasmInterfaceError, match="must be bytes"):
        runner.compile("(module)")


def test_compile_cache_is_keyed_by_digest():
    small = WasmtimeRunner(cache_size=1)
    first = small.compile(add_module())
    assert small.compile(bytearray(add_module())) is first
    small.compile(trap_module())
    assert small.cached_modules == 1 and small.compile(add_module()) is not first
    assert len(first.digest) == 64 and first.size == len(add_module())


def test_host_memory_access_is_bounds_checked(runner, compiled_memory_module):
    instance = runner.instantiate(compiled_memory_module)
    with pytest.raises(InvalidBuffer, match="outside the memory of 65536 bytes"):
        runner.read_memory(instance, PAGE_SIZE - 2, 4)
    with pytest.raises(InvalidBuffer, match="outside the memory"):
        runner.write_memory(instance, PAGE_SIZE, b"x")
    with pytest.raises(InvalidBuffer, match="non-negative int"):
        runner.read_memory(instance, -1, 1)
    with pytest.raises(InvalidBuffer, match="multiple of the item size 4"):
        runner.memory_view(instance, np.float32, offset=2)
    with pytest.raises(InvalidBuffer, match="past the memory"):
        runner.read_array(instance, np.float64, 0, PAGE_SIZE // 8 + 1)
    with pytest.raises(InvalidBuffer, match="no linear memory"):
        runner.read_memory(runner.instantiate(runner.compile(add_module())), 0, 1)
    runner.write_memory(instance, 8, memoryview(bytearray(b"abc")))
    runner.write_memory(instance, 11, np.array([100], np.uint8))
    assert runner.read_memory(instance, 8, 4) == b"abcd"


def test_exported_memory_is_the_instance_memory(runner, traps):
    runner.call(traps, "poke", 12)
    assert runner.read_memory(traps, 12, 4) == b"\x07\x00\x00\x00"
    assert traps.memory.limits.max == 1


def test_create_runner_picks_wasmtime_and_refuses_unknown_names():
    assert isinstance(create_runner(), WasmtimeRunner)
    assert create_runner("wasmtime", budgeted=False).supports_budget is False
    with pytest.raises(BackendUnavailable, match="no WebAssembly runner is registered as 'no-such-engine'"):
        create_runner("no-such-engine")
