"""The two compiled backends in headless Chromium: the demo runs every example on wasm and webgpu,
JsRunner behaves as wasmtime does, JsWebGpuDriver reaches navigator.gpu with the adapter's limits,
execute_async is awaitable from runPythonAsync, and the synchronous API works through run_sync (JSPI)
or says why not.

Every check of one kind runs in one page evaluation; the native side computes what to expect (the
wasmtime runner's interface and trap kinds, the reference backend's results and traps).
"""

from __future__ import annotations

import json
import math
import re
import struct

import pytest

from atlas_web import AtlasTrap, LaunchConfig, Program, Type
from atlas_web.reference import CpuBackend
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.encoding.types import PAGE_SIZE, ValType
from wasm_backend.errors import WasmValidationError
from wasm_backend.runners.wasmtime_runner import WasmtimeRunner
from webdemo.session import DEFAULT_SIZE

import examples
from tests.wasm import modules

from .conftest import TRIPLE, evaluate_within, run_python

BROWSER_BACKENDS = ("wasm", "webgpu")
#: how Chromium's console shows a shader module's compilation warnings (informative: WGSL that compiles)
SHADER_LOG = "warning: Compilation log for [ShaderModule"
#: calls of modules.trap_module that trap, and the kind wasmtime reports for each
TRAP_CALLS = (("boom", ()), ("div", (1, 0)), ("div", (-(2**31), -1)), ("to_int", (math.nan,)),
              ("poke", (PAGE_SIZE - 2,)), ("recurse", ()))
#: lane 5 divides by zero; lanes below it write first
DIVIDE = """\
    mov_imm.u32 r1, 2
    mov_imm.u32 r2, 4
    mul.u32 r3, r255, r2
    mov_imm.i32 r4, 5
    cvt.i32.u32 r6, r255
    sub.i32 r5, r4, r6
    mov_imm.i32 r7, 100
    div.i32 r8, r7, r5
    stg.i32 [r1 + r3], r8
    exit
"""


def run_python_sync(page, code: str):
    """Run Python ``code`` with the synchronous ``pyodide.runPython`` (no JSPI: can_run_sync() is False)
    and return ``result`` passed through JSON."""
    source = code + "\nimport json as _json\n_json.dumps(result)"
    return json.loads(evaluate_within(page, "(source) => window.atlasWeb.pyodide.runPython(source)", source))


def _i64_module() -> bytes:
    """``add64(a, b)``, ``mix(x) = big() + x`` with host ``host.big() -> i64`` and ``host.halve(f32) -> f32``."""
    mb = ModuleBuilder("wide")
    mb.import_function("host", "big", [], [ValType.I64])
    mb.import_function("host", "halve", [ValType.F32], [ValType.F32])
    fn = mb.add_function("add64", [ValType.I64, ValType.I64], [ValType.I64], export=True, param_names=("a", "b"))
    fn.code.local_get("a").local_get("b").i64_add()
    fn = mb.add_function("mix", [ValType.I64], [ValType.I64], export=True, param_names=("x",))
    fn.code.call("host.big").local_get("x").i64_add()
    fn = mb.add_function("half", [ValType.F32], [ValType.F32], export=True, param_names=("x",))
    fn.code.local_get("x").call("host.halve")
    return mb.to_bytes()


def _interface(module) -> list:
    """A comparable description of a CompiledModule's imports and exports."""
    def functype(ft):
        return None if ft is None else [[int(t) for t in ft.params], [int(t) for t in ft.results]]
    return [[[imp.module, imp.name, int(imp.kind), functype(imp.functype),
              None if imp.limits is None else [imp.limits.min, imp.limits.max]] for imp in module.imports],
            [[exp.name, int(exp.kind), functype(exp.functype)] for exp in module.exports]]


# ---- the demo page ------------------------------------------------------------------------------------

def test_the_demo_runs_every_example_ok_on_wasm_and_webgpu(backends_demo, artifacts):
    page, log = backends_demo
    page.wait_for_selector("#backend-status[data-state=probed]", timeout=180_000)
    page.fill("#size", str(DEFAULT_SIZE))
    page.dispatch_event("#size", "change")
    runs = int(page.get_attribute("#all-results", "data-runs") or 0)
    page.click("#run-all")
    page.wait_for_function(f"document.getElementById('all-results').dataset.runs === '{runs + 1}'",
                           timeout=300_000)
    rows = page.eval_on_selector_all("#all-results-body tr", "rows => rows.map(r => [r.dataset.example, "
                                     "r.dataset.backend, r.dataset.check, r.cells[4].textContent])")
    page.screenshot(path=str(artifacts / "browser-backends.png"), full_page=True)
    (artifacts / "browser-backends.json").write_text(json.dumps(
        {"size": DEFAULT_SIZE, "rows": rows, "state": page.get_attribute("#all-results", "data-state")}, indent=2))
    assert page.get_attribute("#all-results", "data-state") == "done"
    assert [(example, backend) for example, backend, _, _ in rows] == \
        [(name, backend) for name in examples.EXAMPLE_MODULES for backend in BROWSER_BACKENDS]
    failed = [f"{example} on {backend}: {check}: {detail[:300]}" for example, backend, check, detail in rows
              if check != "ok"]
    assert not failed, "\n".join(failed)
    assert page.locator("#all-results-body td.ok").count() == len(rows)
    assert [line for line in log.errors if not line.startswith(SHADER_LOG)] == []


@pytest.mark.parametrize("choice", ["auto", *BROWSER_BACKENDS])
def test_each_backend_choice_runs_an_example_with_run(backends_page, choice):
    backends_page.select_option("#example", "softmax")
    backends_page.fill("#size", "300")
    backends_page.dispatch_event("#size", "change")
    backends_page.select_option("#backend", choice)
    runs = int(backends_page.get_attribute("#result", "data-runs") or 0)
    backends_page.click("#run")
    backends_page.wait_for_function(f"document.getElementById('result').dataset.runs === '{runs + 1}'",
                                timeout=180_000)
    assert backends_page.get_attribute("#result", "data-check") == "ok", backends_page.inner_text("#result")
    assert "matches the expected output" in backends_page.inner_text("#result")
    assert backends_page.inner_text("#timing").startswith("checks ")


# ---- JsRunner ---------------------------------------------------------------------------------------

def test_js_runner_behaves_as_wasmtime(backends_page):
    binaries = {"add": modules.add_module(), "kernels": modules.memory_module(1, 64), "traps": modules.trap_module(),
                "host": modules.host_module(), "wide": _i64_module()}
    body = b"\x20\x00\x20\x01\x6a\x0b"  # local.get 0, local.get 1, i32.add, end
    assert binaries["add"].count(body) == 1
    mistyped = binaries["add"].replace(body, b"\x20\x00\x20\x01\x7c\x0b")  # i64.add on two i32s
    native = WasmtimeRunner(budgeted=False)
    with pytest.raises(WasmValidationError):
        native.compile(mistyped)
    interfaces = {name: _interface(native.compile(data)) for name, data in binaries.items()}
    trap_instance = native.instantiate(native.compile(binaries["traps"]))
    native_kinds = []
    for export, args in TRAP_CALLS:
        with pytest.raises(Exception) as info:
            native.call(trap_instance, export, *args)
        native_kinds.append(info.value.kind.name)
    hexes = {name: data.hex() for name, data in binaries.items()}
    hexes["mistyped"] = mistyped.hex()
    got = run_python(backends_page, f"""
import struct
from math import nan
from atlas_web import UnsupportedOperation
from wasm_backend.errors import WasmTrap, WasmValidationError
from wasm_backend.runners import create_runner
from wasm_backend.runners.js_runner import JsRunner
runner = create_runner()
binaries = {{name: bytes.fromhex(text) for name, text in {hexes!r}.items()}}

def interface(module):
    def functype(ft):
        return None if ft is None else [[int(t) for t in ft.params], [int(t) for t in ft.results]]
    return [[[i.module, i.name, int(i.kind), functype(i.functype), None if i.limits is None else
              [i.limits.min, i.limits.max]] for i in module.imports],
            [[e.name, int(e.kind), functype(e.functype)] for e in module.exports]]

compiled = {{name: runner.compile(data) for name, data in binaries.items() if name != "mistyped"}}
from wasm_backend import WasmBackend
result = {{"runner": type(runner).__name__, "engine": runner.engine_name, "views": runner.zero_copy_views,
          "description": runner.engine_description(), "probe": WasmBackend.probe().devices[0],
          "interfaces": {{name: interface(module) for name, module in compiled.items()}}}}
add = runner.instantiate(compiled["add"])
result["add"] = runner.call(add, "add", 2, 40)
result["cached"] = runner.compile(binaries["add"]) is compiled["add"]
traps = runner.instantiate(compiled["traps"])
kinds = []
for export, args in {TRAP_CALLS!r}:
    try:
        runner.call(traps, export, *args)
        kinds.append(None)
    except WasmTrap as trap:
        kinds.append(trap.kind.name)
result["trap_kinds"] = kinds
result["after_traps"] = runner.call(traps, "div", 7, 2)
memory = runner.create_memory(1, 64)
first = runner.instantiate(compiled["kernels"], memory=memory)
second = runner.instantiate(compiled["kernels"], imports={{"env": {{"memory": memory}}}})
runner.write_memory(first, 0, struct.pack("<4i", 1, 2, 3, 4))
result["shared_sum"] = runner.call(second, "sum_i32", 0, 4)
out = bytearray(8)
result["read_into"] = runner.read_memory_into(memory, 4, out).hex()
result["read"] = runner.read_memory(memory, 0, 4).hex()
result["grow"] = [runner.grow_memory(memory, 2), runner.call(first, "grow", 1), runner.memory_pages(memory)]
runner.write_memory(memory, 3 * 65536 - 4, b"\\x07\\x00\\x00\\x00")
result["after_grow"] = runner.call(second, "load_at", 3 * 65536 - 8)
notes = []
host = runner.instantiate(compiled["host"], imports={{"host": {{"twice": lambda x: 2 * x, "note": notes.append}}}})
result["host"] = [runner.call(host, "quad", 5), list(notes)]

class Stop(Exception):
    pass

def refuse(x):
    raise Stop(x)

failing = runner.instantiate(compiled["host"], imports={{"host": {{"twice": refuse, "note": notes.append}}}})
try:
    runner.call(failing, "quad", 1)
    result["propagated"] = None
except Stop as stop:
    result["propagated"] = ["Stop", list(stop.args)]
wide = runner.instantiate(compiled["wide"], imports={{"host": {{"big": lambda: 2**62 + 1, "halve": lambda x: x / 2}}}})
result["i64"] = [runner.call(wide, "add64", 2**62, 2**62 - 1), runner.call(wide, "add64", -1, -2**63 + 1),
                 runner.call(wide, "mix", 5), runner.call(wide, "half", 3.0)]
asynchronous = JsRunner()
module = await asynchronous.compile_async(binaries["add"])
result["compile_async"] = [asynchronous.call(asynchronous.instantiate(module), "add", 20, 22),
                           asynchronous.compile(binaries["add"]) is module]
try:
    runner.compile(binaries["mistyped"])
    result["invalid"] = None
except WasmValidationError as error:
    result["invalid"] = [str(error), error.engine_message]
refusals = []
try:
    runner.call(add, "add", 1, 2, budget=10)
except UnsupportedOperation as error:
    refusals.append(str(error))
try:
    JsRunner(budgeted=True)
except UnsupportedOperation as error:
    refusals.append(str(error))
result["budget"] = [runner.supports_budget, refusals]
try:
    runner.memory_view(memory)
    result["view"] = None
except Exception as error:
    result["view"] = type(error).__name__
""")
    assert (got["runner"], got["engine"], got["views"]) == ("JsRunner", "js", False)
    # the engine named by the browser that runs it, as the page's backend list and the lab's tour show it
    assert re.fullmatch(r"js in (Headless)?Chrome \d+", got["description"]), got["description"]
    assert got["probe"] == f"{got['description']} (SIMD128) on wasm32", got["probe"]
    assert got["interfaces"] == interfaces
    assert got["add"] == 42 and got["cached"]
    assert got["trap_kinds"] == native_kinds and got["after_traps"] == 3
    assert got["shared_sum"] == 10 and got["read_into"] == "0200000003000000" and got["read"] == "01000000"
    assert got["grow"] == [1, 3, 4] and got["after_grow"] == 7
    assert got["host"] == [20, [2.5]] and got["propagated"] == ["Stop", [1]]
    assert got["i64"] == [2**63 - 1, -2**63, 2**62 + 6, 1.5]
    assert got["compile_async"] == [42, True]
    assert got["invalid"] is not None and got["invalid"][1].startswith("CompileError")
    supports_budget, refusals = got["budget"]
    assert not supports_budget and len(refusals) == 2 and all("budget" in text for text in refusals)
    assert got["view"] is not None


# ---- JsWebGpuDriver -----------------------------------------------------------------------------------

WGSL_DOUBLE = """
@group(0) @binding(0) var<storage, read_write> data: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&data)) { data[id.x] = data[id.x] * 2.0; }
}
"""
WGSL_BAD = """
@compute @workgroup_size(1) fn main() {
    let x: f32 = 1u;
}
"""


def test_js_webgpu_driver_reaches_navigator_gpu_with_the_adapters_limits(backends_page):
    got = run_python(backends_page, f"""
import js, struct
from webgpu_backend.drivers import default_driver
from webgpu_backend.drivers.js_webgpu import JsWebGpuDriver, adapter_limits
from webgpu_backend.errors import ShaderCompilationError
from webgpu_backend.resources import DispatchCommand
adapter = await js.navigator.gpu.requestAdapter()
adapter_features = sorted(name for name in ("shader-f16",) if adapter.features.has(name))
driver = default_driver()                 # the sync constructor, through run_sync
opened = await JsWebGpuDriver.create()    # the async one
result = {{"class": type(driver).__name__, "adapter_limits": adapter_limits(adapter.limits),
          "limits": dict(driver.limits), "async_limits": dict(opened.limits), "features": sorted(driver.features),
          "adapter_features": adapter_features, "info": driver.adapter_info()}}
buffer = driver.create_buffer(1000)
driver.write_buffer(buffer, 0, struct.pack("<250f", *range(250)))
driver.write_buffer(buffer, 5, b"\\x01\\x02\\x03")            # unaligned: the edge words are patched
result["sync_read"] = bytes(driver.read_buffer(buffer, 4, 8)).hex()
result["async_read"] = bytes(await driver.read_buffer_async(buffer, 3, 6)).hex()
module = driver.compile({WGSL_DOUBLE!r})
pipeline = driver.create_pipeline(module, "main", {{0: "storage"}})
data = driver.create_buffer(64 * 4)
driver.write_buffer(data, 0, struct.pack("<64f", *[k + 0.5 for k in range(64)]))
driver.dispatch_many([DispatchCommand(pipeline, {{0: data}}, (1, 1, 1)), DispatchCommand(pipeline, {{0: data}}, 1)])
result["doubled"] = list(struct.unpack("<64f", bytes(await driver.read_buffer_async(data))))
try:
    driver.compile({WGSL_BAD!r})
    result["bad"] = None
except ShaderCompilationError as error:
    result["bad"] = [error.line, error.column, error.stage, error.compiler_message, error.source_line]
driver.submit_and_wait()
driver.close()
opened.close()
""")
    assert got["class"] == "JsWebGpuDriver"
    storage = got["adapter_limits"]["maxStorageBufferBindingSize"]
    assert got["limits"]["maxStorageBufferBindingSize"] == storage > 128 << 20  # the adapter's, not the default
    assert got["limits"] == got["async_limits"]
    assert all(got["limits"][name] == value for name, value in got["adapter_limits"].items())
    # shader-f16 is asked for where the adapter offers it (SwiftShader does not); Chromium adds features of its own
    assert [name for name in got["features"] if name == "shader-f16"] == got["adapter_features"], got["features"]
    assert got["info"]["backend"] == "WebGPU" and got["info"]["device"] and "navigator.gpu" in got["info"]["engine"]
    raw = bytearray(struct.pack("<250f", *range(250)))
    raw[5:8] = b"\x01\x02\x03"
    assert got["sync_read"] == bytes(raw[4:12]).hex() and got["async_read"] == bytes(raw[3:9]).hex()
    assert got["doubled"] == [(k + 0.5) * 4 for k in range(64)]
    line, column, stage, message, source_line = got["bad"]
    assert (line, stage) == (3, "module") and column and "error" in message and "let x: f32 = 1u;" in source_line


# ---- execute_async and the synchronous API -----------------------------------------------------------

def _reference(text: str, lanes: int) -> tuple[list[int], tuple | None]:
    backend = CpuBackend()
    handle = backend.allocate_typed(list(range(16)), Type.I32)
    trap = None
    try:
        backend.execute_program(Program.from_text(text), LaunchConfig.linear(lanes))
    except AtlasTrap as error:
        trap = [int(error.code), error.instruction_index, error.lane]
    return backend.copy_typed_from(handle, Type.I32).tolist(), trap


def test_execute_async_is_awaited_and_the_sync_api_runs_through_run_sync(backends_page):
    got = run_python(backends_page, f"""
from pyodide.ffi import can_run_sync
from atlas_web import AtlasTrap, LaunchConfig, Program, Type
from atlas_web.registry import get_backend
result = {{"can_run_sync": can_run_sync()}}
for name in {BROWSER_BACKENDS!r}:
    runs = {{}}
    for mode in ("async", "sync"):
        for label, text, lanes in (("triple", {TRIPLE!r}, 16), ("divide", {DIVIDE!r}, 8)):
            with get_backend(name) as backend:
                handle = backend.allocate_typed(list(range(16)), Type.I32)
                trap = None
                try:
                    if mode == "async":
                        await backend.execute_async(Program.from_text(text), LaunchConfig.linear(lanes))
                    else:
                        backend.execute_program(Program.from_text(text), LaunchConfig.linear(lanes))
                except AtlasTrap as error:
                    trap = [int(error.code), error.instruction_index, error.lane]
                runs[f"{{label}} {{mode}}"] = [backend.copy_typed_from(handle, Type.I32).tolist(), trap]
    result[name] = runs
""")
    assert got["can_run_sync"]
    triple, divide = _reference(TRIPLE, 16), _reference(DIVIDE, 8)
    assert divide[1] is not None  # the reference traps at lane 5
    for name in BROWSER_BACKENDS:
        for mode in ("async", "sync"):
            assert got[name][f"triple {mode}"] == list(triple), (name, mode)
            values, trap = got[name][f"divide {mode}"]
            assert trap == divide[1], (name, mode)


def test_without_run_sync_the_sync_api_works_where_it_can_and_says_why_not(backends_page):
    run_python(backends_page, """
from atlas_web import Type
from atlas_web.registry import get_backend
from webgpu_backend.drivers.js_webgpu import JsWebGpuDriver
sync_test = {"gpu": get_backend("webgpu"), "driver": await JsWebGpuDriver.create()}
sync_test["handle"] = sync_test["gpu"].allocate_typed(list(range(16)), Type.I32)
result = True
""")  # the page's cells share Pyodide's globals: the next, synchronous cell finds sync_test
    got = run_python_sync(backends_page, f"""
from pyodide.ffi import can_run_sync
from atlas_web import BackendUnavailable, ExecutionFailed, LaunchConfig, Program, Type
from wasm_backend import WasmBackend
from webgpu_backend.drivers.js_webgpu import JsWebGpuDriver
state = sync_test
result = {{"can_run_sync": can_run_sync()}}
wasm = WasmBackend()                        # compiles with new WebAssembly.Module: no waiting needed
handle = wasm.allocate_typed(list(range(16)), Type.I32)
wasm.execute_program(Program.from_text({TRIPLE!r}), LaunchConfig.linear(16))
result["wasm"] = wasm.copy_typed_from(handle, Type.I32).tolist()
try:
    JsWebGpuDriver()
    result["driver"] = None
except BackendUnavailable as error:
    result["driver"] = str(error)
try:  # the launch is submitted; waiting for its trap record or reading the buffer back cannot happen here
    state["gpu"].execute_program(Program.from_text({TRIPLE!r}), LaunchConfig.linear(16))
    state["gpu"].copy_typed_from(state["handle"], Type.I32)
    result["read"] = None
except ExecutionFailed as error:
    result["read"] = str(error)
state["driver"].compile("fn broken( {{")           # checked at the next await point
from wasm_backend.encoding.module import ModuleBuilder
from wasm_backend.errors import WasmInterfaceError
from wasm_backend.runners.js_runner import JsRunner
builder = ModuleBuilder("big")
builder.add_memory(160)
builder.add_data(bytes(9 << 20), offset=0)              # over the 8 MB of synchronous compilation
state["big"] = builder.to_bytes()
try:
    JsRunner().compile(state["big"])
    result["big"] = None
except WasmInterfaceError as error:
    result["big"] = str(error)
""")
    assert not got["can_run_sync"]
    assert got["wasm"] == [3 * k for k in range(16)]
    assert got["driver"] and "run_sync" in got["driver"] and "JsWebGpuDriver.create()" in got["driver"]
    assert got["read"] and "run_sync" in got["read"] and "read_buffer_async" in got["read"]
    # the page's Python runs in a Web Worker, where the browser compiles a module of any size synchronously
    # (its 8 MB limit, which JsRunner reports with the way out, holds on the page's thread only)
    assert got["big"] is None
    later = run_python(backends_page, """
from atlas_web import Type
from webgpu_backend.errors import ShaderCompilationError
state = sync_test
driver = state["driver"]
buffer = driver.create_buffer(16)
try:
    await driver.read_buffer_async(buffer)
    result = {"deferred": None}
except ShaderCompilationError as error:
    result = {"deferred": [error.stage, error.line]}
result["values"] = state["gpu"].copy_typed_from(state["handle"], Type.I32).tolist()   # run_sync works again
from wasm_backend.runners.js_runner import JsRunner
result["big"] = [JsRunner().compile(state["big"]).size, (await JsRunner().compile_async(state["big"])).size]
driver.close()
state["gpu"].close()
del sync_test
""")
    assert later["deferred"] is not None and later["deferred"][0] == "module"
    assert later["values"] == [3 * k for k in range(16)]
    assert later["big"][0] == later["big"][1] > 9 << 20
