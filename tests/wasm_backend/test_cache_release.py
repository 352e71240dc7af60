"""Compile caches stay bounded and what leaves them is freed (issue 17 item 6: memory growth with many
distinct programs). A wasmtime Store frees an instance only when the Store itself goes, so these check
that the Store of an evicted program's instance is collected, not RSS (benchmarks/memory_growth.py
measures that)."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from atlas_web import LaunchConfig
from atlas_web.isa import Type
from wasm_backend import WasmBackend
from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType
from wasm_backend.runners import wasmtime_runner
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner

from tests.verify_programs import constant_store


def test_evicted_programs_free_their_instance_and_store():
    backend = WasmBackend(cache_size=3, threads=1)
    out = backend.allocate_buffer(4)
    stores = []
    for value in range(8):
        backend.execute_program(constant_store(value, out), LaunchConfig.linear(1))
        assert backend.copy_typed_from(out, Type.U32).tolist() == [value]
        loaded = backend._loaded.values()[-1]
        stores.append(weakref.ref(loaded.instance.context))
        del loaded
    gc.collect()
    assert backend.device_info()["compiled_programs"] == 3 and len(backend._pipeline.programs) == 3
    assert [ref() is not None for ref in stores] == [False] * 5 + [True] * 3
    backend.execute_program(constant_store(0, out), LaunchConfig.linear(1))   # an evicted program builds again
    assert backend.copy_typed_from(out, Type.U32).tolist() == [0]
    backend.close()


def _worker_module(value: int) -> bytes:
    """Imports a shared ``env.memory``; ``k(i)`` stores ``value`` at ``4 * i``."""
    mb = ModuleBuilder(f"worker{value}")
    mb.import_memory("env", "memory", 1, 1, shared=True)
    fn = mb.add_function("k", [ValType.I32], [], export=True, param_names=("i",))
    fn.code.local_get("i").i32_const(2).i32_shl().i32_const(value).i32_store(MemArg(0))
    return mb.to_bytes()


def test_worker_instances_stay_bounded_and_old_stores_are_freed(monkeypatch):
    monkeypatch.setattr(wasmtime_runner, "_WORKER_INSTANCES", 2)
    runner = WasmtimeRunner(threads=2)
    memory = runner.create_memory(1, 1, shared=True)
    stores = []
    try:
        for value in range(1, 9):
            instance = runner.instantiate(runner.compile(_worker_module(value)), memory=memory)
            runner.parallel_call(instance, "k", [(i,) for i in range(64)])
            assert set(np.frombuffer(runner.read_memory(memory, 0, 256), dtype=np.uint32)) == {value}
            for slot in runner._slots.values():
                assert slot.instances <= 2
                stores.append(weakref.ref(slot._store))
        gc.collect()
        alive = {id(ref()) for ref in stores if ref() is not None}
        assert len(stores) > 2 * len(runner._slots) >= len(alive)  # per thread: the current Store and one before
    finally:
        runner.close()
