"""ParallelDispatch imports (wasm_backend/parallel_dispatch.py): the host plans a dispatch's calls once per
distinct arguments and runs them on the threads every time; results stay those of a fresh plan."""

from __future__ import annotations

import numpy as np
import pytest

import wasm_backend.backend as wasm_backend_module
from atlas_web import LaunchConfig, Program
from atlas_web.isa import Register, Type
from atlas_web.isa.addresses import make_pointer
from atlas_web.launch import ExecutionParams
from atlas_web.verify import verify
from wasm_backend import WasmBackend
from wasm_backend.lowering import compile_program
from wasm_backend.lowering.coop_reduce import PARTIAL_BYTES
from wasm_backend.parallel_dispatch import PLANS_KEPT
from wasm_backend.thread_policy import PARALLEL_MAP_THRESHOLDS, PARALLEL_REDUCE_THRESHOLD, reduce_chunk_count

COUNT = max(PARALLEL_MAP_THRESHOLDS.values()) + 4099
REDUCE_COUNT = PARALLEL_REDUCE_THRESHOLD + 4099


def _counting(monkeypatch, name: str) -> list:
    """Record the arguments of every call of the backend's plan function ``name``."""
    calls = []
    original = getattr(wasm_backend_module, name)
    monkeypatch.setattr(wasm_backend_module, name, lambda *args: calls.append(args) or original(*args))
    return calls


def test_a_repeated_launch_plans_its_map_once_and_dispatches_every_time(monkeypatch):
    planned = _counting(monkeypatch, "_map_plan")
    backend = WasmBackend(threads=2)
    try:
        values = np.arange(COUNT, dtype=np.float32) % 1000 - 500
        a, b = backend.allocate_typed(values), backend.allocate_typed(values[::-1].copy())
        outs = [backend.allocate_typed(COUNT, Type.F32) for _ in range(2)]
        programs = [Program.from_text(f"pmap2.add.f32 [buf{int(out)} + 0], [buf{int(a)} + 0], "
                                      f"[buf{int(b)} + 0], {COUNT}\nexit\n") for out in outs]
        before = backend.device_info()["parallel_dispatches"]
        for _ in range(3):
            for program in programs:
                backend.execute_program(program, LaunchConfig())
        assert backend.device_info()["parallel_dispatches"] - before == 6
        assert len(planned) == 2                         # one plan per destination (its own arguments)
        for out in outs:
            got = np.asarray(backend.copy_typed_from(out, Type.F32, COUNT))
            assert np.array_equal(got, values + values[::-1])
    finally:
        backend.close()


def test_a_repeated_reduction_plans_once_and_folds_partials_from_the_launch_area(monkeypatch):
    planned = _counting(monkeypatch, "_reduce_plan")
    backend = WasmBackend(threads=2)
    try:
        values = (np.arange(REDUCE_COUNT) % 7).astype(np.int32)
        src, out = backend.allocate_typed(values), backend.allocate_typed(1, Type.I32)
        program = Program.from_text(f"preduce.sum.i32 r1, [buf{int(src)} + 0], {REDUCE_COUNT}\n"
                                    f"stg.i32 [buf{int(out)} + 0], r1\nexit\n")
        for k in range(3):
            backend.copy_to_buffer(src, (values + k).tobytes())
            backend.execute_program(program, LaunchConfig())
            assert int(backend.copy_typed_from(out, Type.I32, 1)[0]) == int((values + k).sum(dtype=np.int64)
                                                                            .astype(np.int32))
        assert len(planned) == 1
        index, src_address, count, partials = planned[0][2:]
        assert count == REDUCE_COUNT
        # every chunk's partial inside the per-launch area's cooperative scratch (reduce_partials_bytes)
        launch = compile_program(program, verify(program), LaunchConfig(), parallel=True).launch
        assert partials == backend._area_base + launch.coop_scratch
        assert launch.coop_scratch_bytes == reduce_chunk_count(REDUCE_COUNT) * PARTIAL_BYTES
        assert launch.coop_scratch + launch.coop_scratch_bytes <= launch.total
    finally:
        backend.close()


def test_an_import_keeps_at_most_plans_kept_argument_tuples(monkeypatch):
    """One program launched over more distinct sources (a preset pointer) than PLANS_KEPT: the import forgets
    its plans and plans again (no unbounded growth), and every launch gets its own source's result."""
    planned = _counting(monkeypatch, "_map_plan")
    backend = WasmBackend(threads=2)
    try:
        count = PARALLEL_MAP_THRESHOLDS["arithmetic"]
        dst = backend.allocate_typed(count, Type.F32)
        src = backend.allocate_typed(np.arange(count + PLANS_KEPT + 1, dtype=np.float32))
        program = Program.from_text(f"pmap.neg.f32 [buf{int(dst)} + 0], [r2 + 0], {count}\nexit\n")
        sources = (*range(PLANS_KEPT), 0, PLANS_KEPT, 0)
        for k in sources:
            pointer = (Type.U64, make_pointer(int(src), 4 * k))
            backend.execute_program_with_params(program, ExecutionParams(LaunchConfig(), {Register(2): pointer}))
            assert float(backend.copy_typed_from(dst, Type.F32, 1)[0]) == -float(k)
        # source 0 again is kept; the 65th distinct source makes the import forget: source 0 is planned again
        assert len(planned) == PLANS_KEPT + 2
    finally:
        backend.close()


def _dispatching_module(*, missing: bool = False) -> bytes:
    """``go(first)`` calls ``env.dispatch(first)``; ``k(x)`` stores x at byte 4 * x and traps when x is 1; with
    ``missing`` the module also imports ``env.missing`` (after the dispatch)."""
    from wasm_backend.encoding.immediates import MemArg
    from wasm_backend.encoding.module import ModuleBuilder
    from wasm_backend.encoding.types import ValType
    mb = ModuleBuilder("dispatching")
    mb.import_memory("env", "memory", 1, 16, shared=True)
    mb.import_function("env", "dispatch", [ValType.I32], [])
    if missing:
        mb.import_function("env", "missing", [], [])
    w = mb.add_function("k", [ValType.I32], [], export=True).code
    w.local_get(0).i32_const(4).i32_mul().local_get(0).i32_store(MemArg(0, 2))
    w.local_get(0).i32_const(1).i32_eq()
    with w.if_():
        w.unreachable()
    mb.add_function("go", [ValType.I32], [], export=True).code.local_get(0).call("env.dispatch")
    return mb.to_bytes()


def test_a_dispatch_import_plans_once_runs_every_time_and_raises_the_kernels_trap_each_time():
    """Natively (the browser's JS dispatcher: tests/web/test_browser_threads.py): one plan per distinct arguments,
    kept also when its batch traps, so a repeated failing dispatch raises WasmTrap again, and the runner goes on."""
    from wasm_backend.errors import WasmTrap
    from wasm_backend.parallel_dispatch import ParallelDispatch
    from wasm_backend.runners.wasmtime_runner import WasmtimeRunner
    runner = WasmtimeRunner(budgeted=False, threads=2)
    try:
        planned, count = [], runner.dispatch_count()
        dispatch = ParallelDispatch(lambda first: planned.append(first) or ("k", [(first + j,) for j in range(8)]),
                                    count)
        memory = runner.create_memory(1, 16, shared=True)
        instance = runner.instantiate(runner.compile(_dispatching_module()), memory=memory,
                                      imports={"env": {"dispatch": dispatch}})
        for first in (2, 2, 0, 0, 2):
            if first == 0:
                with pytest.raises(WasmTrap):
                    runner.call(instance, "go", first)
            else:
                runner.call(instance, "go", first)
        assert planned == [2, 0] and count.value == 5
        assert np.frombuffer(runner.read_memory(instance, 8, 32), np.int32).tolist() == list(range(2, 10))
    finally:
        runner.close()


def test_dispatch_imports_are_made_only_once_every_import_is_there(monkeypatch):
    """A refused instantiation makes no dispatch import (the browser's hold proxies only an instance releases)."""
    from wasm_backend.errors import WasmInterfaceError
    from wasm_backend.parallel_dispatch import DispatchCount, ParallelDispatch
    from wasm_backend.runner import WasmRunner
    from wasm_backend.runners.wasmtime_runner import WasmtimeRunner
    made = []
    original = WasmRunner._dispatch_import
    monkeypatch.setattr(WasmRunner, "_dispatch_import",
                        lambda self, dispatch, ref: made.append(dispatch) or original(self, dispatch, ref))
    runner = WasmtimeRunner(budgeted=False, threads=2)
    try:
        dispatch = ParallelDispatch(lambda first: ("k", [(first,)]), DispatchCount())
        module = runner.compile(_dispatching_module(missing=True))
        with pytest.raises(WasmInterfaceError, match="env.missing"):
            runner.instantiate(module, memory=runner.create_memory(1, 16, shared=True),
                               imports={"env": {"dispatch": dispatch}})
        assert made == []
        instance = runner.instantiate(module, memory=runner.create_memory(1, 16, shared=True),
                                      imports={"env": {"dispatch": dispatch, "missing": lambda: None}})
        runner.call(instance, "go", 5)
        assert made == [dispatch] and runner.read_memory(instance, 20, 4) == (5).to_bytes(4, "little")
    finally:
        runner.close()
