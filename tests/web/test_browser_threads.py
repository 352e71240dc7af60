"""The wasm backend on Web Workers in Chromium: the demo page's Python runs in a worker of a cross-origin
isolated site, so ``WasmBackend(threads=2)`` runs large maps and reductions on a pool of Web Workers over
one shared memory. Results are bit-identical to one thread and workers ran chunks (the fallback on the
page's thread, where notebook.html runs Pyodide, is tested in test_notebook.py).
"""

from __future__ import annotations

from .conftest import run_python

#: maps and a reduction over the thresholds (wasm_backend.thread_policy), with inputs from a fixed formula
THREADS_CODE = """
import array, hashlib
from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import Address, BinaryMapOperation, MapOperation, ParallelMap, ParallelMapBinary, ParallelReduce
from atlas_web.isa import ReduceOperation, Register, Type
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from wasm_backend import WasmBackend
import wasm_backend.backend as wasm_backend_module

# count the plans of parallel maps made (until the end of this code): the dispatch keeps them by its arguments,
# so a launch repeated with the same arguments plans (enters Python) once
planned = []
_map_plan = wasm_backend_module._map_plan
wasm_backend_module._map_plan = lambda *args: planned.append(args) or _map_plan(*args)

N = 1 << 22
a = (array.array("f", [(i % 1000) * 0.01 - 5.0 for i in range(4096)]) * (N // 4096)).tobytes()
b = (array.array("f", [((i * 7) % 513) * 0.03 - 7.0 for i in range(4096)]) * (N // 4096)).tobytes()

def outcome(threads):
    planned.clear()
    backend = WasmBackend(threads=threads)
    ha, hb, out = backend.allocate_buffer(4 * N), backend.allocate_buffer(4 * N), backend.allocate_buffer(4 * N)
    backend.copy_to_buffer(ha, a)
    backend.copy_to_buffer(hb, b)
    digests = {}
    add = ParallelMapBinary(dst_array=Address.BufferOffset(out), src_a=Address.BufferOffset(ha),
                            src_b=Address.BufferOffset(hb), count=N, operation=BinaryMapOperation.Add)
    exp = ParallelMap(dst_array=Address.BufferOffset(out), src_array=Address.BufferOffset(ha), count=N,
                      operation=MapOperation.Exp)
    # three launches of each: a worker that is slow to wake on a busy machine joins by the later ones
    for name, instr in (("add", add), ("exp", exp)):
        for _ in range(3):
            backend.execute_program(ProgramBuilder().add(instr).build(), LaunchConfig())
        digests[name] = hashlib.sha256(bytes(backend.copy_from_buffer(out))).hexdigest()
    total = backend.allocate_buffer(4)
    program = (ProgramBuilder()
               .add(ParallelReduce(dst=Register(3), src_array=Address.BufferOffset(hb), count=N,
                                   operation=ReduceOperation.Sum))
               .add(INSTRUCTION_CLASSES["STG"](dst=Address.BufferOffset(total), src=Register(3), ty=Type.F32))
               .build())
    backend.execute_program(program, LaunchConfig())
    digests["sum"] = bytes(backend.copy_from_buffer(total)).hex()
    info = backend.device_info()
    backend.close()
    return {"digests": digests, "threads": info["threads"], "reason": info["threads_reason"],
            "worker_chunks": info["parallel_worker_chunks"], "dispatches": info["parallel_dispatches"],
            "planned": len(planned)}

try:
    result = {"one": outcome(1), "two": outcome(2)}
finally:   # the page serves the package's other tests: they get the backend's own function back
    wasm_backend_module._map_plan = _map_plan
"""


def test_wasm_threads_in_the_page_are_bit_identical_to_one_thread(backends_page):
    outcome = run_python(backends_page, THREADS_CODE)
    one, two = outcome["one"], outcome["two"]
    assert two["threads"] == 2 and two["reason"] == "", two
    assert one["threads"] == 1
    assert two["dispatches"] == 7 and two["worker_chunks"] > 0, two   # 3 Add, 3 Exp, 1 Sum
    assert two["planned"] == 2 and one["planned"] == 0, (one, two)   # Add and Exp planned once each
    assert two["digests"] == one["digests"]


TRACE_CODE = """
from atlas_web import LaunchConfig, Program, Type
from wasm_backend import WasmBackend
from wasm_backend.runners.js_threads import shared_pool

N = 1 << 22
backend = WasmBackend(threads=2)
for _ in range(3):
    backend.allocate_typed(N, Type.F32)
program = Program.from_text(f"pmap2.add.f32 [buf4 + 0], [buf2 + 0], [buf3 + 0], {N}\\nexit\\n")
backend.execute_program(program, LaunchConfig())
pool = shared_pool(2)
pool.set_tracing(True)
backend.execute_program(program, LaunchConfig())
traced = pool.take_trace()
pool.set_tracing(False)
backend.execute_program(program, LaunchConfig())
result = {"traced": traced, "after": pool.take_trace()}
backend.close()
"""


def test_a_traced_batch_records_each_call_once_inside_the_batch(backends_page):
    outcome = run_python(backends_page, TRACE_CODE)
    batches = [r for r in outcome["traced"] if r[1] == -1]
    calls = sorted((r for r in outcome["traced"] if r[1] >= 0), key=lambda r: r[1])
    assert len(batches) == 1 and batches[0][0] == 0
    _, _, opened, closed = batches[0]
    assert [r[1] for r in calls] == list(range(len(calls))) and len(calls) >= 2
    # a worker's clock (its own timeOrigin + now) stands apart from the calling thread's: each context converts
    # its monotonic clock to the epoch once, when it starts, so the two may differ by the wall clock's drift
    # between the starts (milliseconds under NTP slewing); the calling thread's own calls are exact
    slack = {0: 0.0, 1: 20.0}
    assert all(r[0] in slack and opened - slack[r[0]] <= r[2] <= r[3] <= closed + slack[r[0]] for r in calls), outcome
    assert outcome["after"] == []  # tracing off: nothing recorded


#: the wasm runner on its own: a call that traps in a worker or in the calling thread, the batch runner kept
#: per export (parallel_caller) and the checked parallel_call, as tests/wasm_backend/test_parallel_maps.py
#: checks them natively
RUNNER_CODE = """
from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType
from wasm_backend.errors import WasmInterfaceError, WasmTrap
from wasm_backend.runners.js_runner import JsRunner

mb = ModuleBuilder("trapping")
mb.import_memory("env", "memory", 1, 16, shared=True)
fn = mb.add_function("k", [ValType.I32], [], export=True)
w = fn.code
w.local_get(0).i32_const(4).i32_mul().local_get(0).i32_store(MemArg(0, 2))   # stores x at byte 4 * x
w.local_get(0).i32_const(1).i32_eq()
with w.if_():
    w.unreachable()                                                           # and traps when x is 1
mb.add_function("wide", [ValType.I32, ValType.I64], [], export=True)         # an i64 parameter, no body
runner = JsRunner(threads=2)
instance = runner.instantiate(runner.compile(mb.to_bytes()), memory=runner.create_memory(1, 16, shared=True))
caller = runner.parallel_caller(instance, "k")
trapped = 0
for attempt in range(20):  # whichever thread takes the trapping call, the caller sees the trap
    try:
        (caller if attempt % 2 else lambda calls: runner.parallel_call(instance, "k", calls))([(0,), (1,)])
    except WasmTrap:
        trapped += 1
caller([(index,) for index in range(2, 40)])      # every call runs once
refused = []
for attempt in (lambda: runner.parallel_call(instance, "k", [(1, 2)]), lambda: runner.parallel_caller(instance, "nope")):
    try:
        attempt()
    except WasmInterfaceError as error:
        refused.append(str(error))
wide = []   # an i64 argument of 2**53 - 1 or more in magnitude cannot travel as Float64: refused, naming it
for attempt in (lambda: runner.parallel_call(instance, "wide", [(0, 1), (1, (1 << 53) - 1)]),
                lambda: runner.parallel_caller(instance, "wide")([(0, -(1 << 60)), (1, 0)])):
    try:
        attempt()
    except WasmInterfaceError as error:
        wide.append(str(error))
runner.parallel_caller(instance, "wide")([(0, (1 << 53) - 2), (1, 2 - (1 << 53))])   # the largest run
import array
result = {"wide": wide, "trapped": trapped, "memory": array.array("i", runner.read_memory(instance, 0, 160)).tolist(),
          "same": runner.parallel_caller(instance, "k") is caller, "refused": refused,
          "worker_calls": runner.worker_calls}
runner.close()
"""


def test_the_runner_raises_a_worker_call_trap_and_stays_usable(backends_page):
    outcome = run_python(backends_page, RUNNER_CODE)
    assert outcome["trapped"] == 20
    assert outcome["memory"] == list(range(40))
    assert outcome["same"] is True        # one batch runner per instance and export, made once
    assert len(outcome["refused"]) == 2 and "takes 1 argument" in outcome["refused"][0], outcome["refused"]
    assert "nope" in outcome["refused"][1]
    assert len(outcome["wide"]) == 2 and all("parameter 1 is i64" in e and "2**53" in e for e in outcome["wide"]), \
        outcome["wide"]
    assert outcome["worker_calls"] > 0


#: an instance is released with its last reference after batches on the workers (shared memory: the caller kept
#: in its context refers to the module and memory, not to it) and on the calling thread (a memory that is not
#: shared: that caller refers to the instance, so the context must not keep it: a cycle would leave the instance
#: and its host-function proxies to the collector)
RELEASE_CODE = """
import gc, weakref
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType
from wasm_backend.runners.js_runner import JsRunner

runner = JsRunner(threads=2)
result = {}
for shared in (True, False):
    mb = ModuleBuilder("released")
    mb.import_memory("env", "memory", 1, 1, shared=shared)
    mb.add_function("k", [ValType.I32], [], export=True)
    instance = runner.instantiate(runner.compile(mb.to_bytes()), memory=runner.create_memory(1, 1, shared=shared))
    runner.parallel_caller(instance, "k")([(0,), (1,)])
    released = weakref.ref(instance)
    gc.disable()
    try:
        del instance
        result["shared" if shared else "unshared"] = released() is None
    finally:
        gc.enable()
runner.close()
"""


def test_an_instance_is_released_with_its_last_reference_after_batches(backends_page):
    assert run_python(backends_page, RELEASE_CODE) == {"shared": True, "unshared": True}


#: two threaded backends launching in turn: the workers keep both memories (and their instances), so after each
#: backend's first launch no batch sends the workers anything again; the results are each backend's own
ALTERNATING_CODE = """
from atlas_web import LaunchConfig, Program, Type
from wasm_backend import WasmBackend
from wasm_backend.runners.js_threads import shared_pool

N = 1 << 21
backends = [WasmBackend(threads=2) for _ in range(2)]
programs, dsts = [], []
for k, backend in enumerate(backends):
    src = backend.allocate_typed([float(k + 1)] * N, Type.F32)
    dst = backend.allocate_typed(N, Type.F32)
    dsts.append(dst)
    programs.append(Program.from_text(f"pmap.neg.f32 [buf{int(dst)} + 0], [buf{int(src)} + 0], {N}\\nexit\\n"))
    backend.execute_program(programs[-1], LaunchConfig())
pool = shared_pool(2)
before, chunks = pool.deliveries, pool.worker_calls
for _ in range(3):
    for backend, program in zip(backends, programs):
        backend.execute_program(program, LaunchConfig())
result = {"sent": pool.deliveries - before, "worker_chunks": pool.worker_calls - chunks,
          "firsts": [float(b.copy_typed_from(dst, Type.F32, 1)[0]) for b, dst in zip(backends, dsts)]}
for backend in backends:
    backend.close()
"""


def test_two_threaded_backends_in_turn_keep_their_memories_on_the_workers(backends_page):
    outcome = run_python(backends_page, ALTERNATING_CODE)
    assert outcome["sent"] == 0, outcome
    assert outcome["worker_chunks"] > 0 and outcome["firsts"] == [-1.0, -2.0], outcome


#: a ParallelDispatch import in the page is the pool's JS dispatcher: one plan (a call into Python) per distinct
#: arguments; a repeated dispatch runs its kept batch from JS, and one whose batch traps raises WasmTrap each time
#: (the kept plan's failure goes back through Python); an instance is released with its last reference
DISPATCH_CODE = """
import gc, weakref
from wasm_backend.encoding.immediates import MemArg
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import ValType
from wasm_backend.errors import WasmTrap
from wasm_backend.parallel_dispatch import ParallelDispatch
from wasm_backend.runners.js_runner import JsRunner

mb = ModuleBuilder("dispatching")
mb.import_memory("env", "memory", 1, 16, shared=True)
mb.import_function("env", "dispatch", [ValType.I32], [])
w = mb.add_function("k", [ValType.I32], [], export=True).code
w.local_get(0).i32_const(4).i32_mul().local_get(0).i32_store(MemArg(0, 2))   # stores x at byte 4 * x
w.local_get(0).i32_const(1).i32_eq()
with w.if_():
    w.unreachable()                                                           # and traps when x is 1
mb.add_function("go", [ValType.I32], [], export=True).code.local_get(0).call("env.dispatch")
runner = JsRunner(threads=2)
planned, count = [], runner.dispatch_count()
dispatch = ParallelDispatch(lambda first: planned.append(first) or ("k", [(first + j,) for j in range(8)]), count)
instance = runner.instantiate(runner.compile(mb.to_bytes()), memory=runner.create_memory(1, 16, shared=True),
                              imports={"env": {"dispatch": dispatch}})
raised = []
for first in (2, 2, 0, 0, 2):
    try:
        runner.call(instance, "go", first)
        raised.append(None)
    except WasmTrap as error:
        raised.append(type(error).__name__)
import array
result = {"planned": planned, "count": int(count.value), "raised": raised,
          "memory": array.array("i", runner.read_memory(instance, 8, 32)).tolist()}
# (an instance whose call raised stays referred to by the frames of the exception's traceback, as with a Python
# import: released here is one whose dispatches, the kept ones included, ran without failing)
dispatch = ParallelDispatch(lambda first: ("k", [(first + j,) for j in range(8)]), count)
instance = runner.instantiate(runner.compile(mb.to_bytes()), memory=runner.create_memory(1, 16, shared=True),
                              imports={"env": {"dispatch": dispatch}})
for first in (3, 3):
    runner.call(instance, "go", first)
released = weakref.ref(instance)
gc.disable()
try:
    del instance
    result["released"] = released() is None
finally:
    gc.enable()
runner.close()
"""


def test_the_js_dispatcher_plans_once_and_raises_a_kept_batchs_trap_each_time(backends_page):
    outcome = run_python(backends_page, DISPATCH_CODE)
    assert outcome["planned"] == [2, 0] and outcome["count"] == 5, outcome
    assert outcome["raised"] == [None, None, "WasmTrap", "WasmTrap", None], outcome
    assert outcome["memory"] == list(range(2, 10)) and outcome["released"] is True, outcome
