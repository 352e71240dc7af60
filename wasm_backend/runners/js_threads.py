"""JsThreadPool: the browser runner's worker threads, a pool of Web Workers over one shared memory.

Where threads can run. A batch waits for its workers with ``Atomics.wait``, which the browser allows
only off the page's thread, and the memory must be a shared ``WebAssembly.Memory``, which needs
cross-origin isolation. ``thread_support(requested)`` therefore answers ``(threads, reason)``: the
threads a JsRunner runs on (``requested``, None meaning ``navigator.hardwareConcurrency``; at most
``MAX_THREADS``) and, when that is 1, why (the page is not cross-origin isolated; Python runs on the
page's thread, where waiting is refused; the context cannot start workers). The demo page and
JupyterLite run their Python in a worker, so both get threads on a cross-origin isolated site (the
site's server sends COOP/COEP); the page's thread itself is never blocked.

How a batch runs (``JsThreadPool.batch``). One pool per thread count serves every runner of this Python
(``shared_pool``): ``threads - 1`` workers started from a Blob URL (nothing but this module is needed),
sharing one control block (a SharedArrayBuffer) with the calling thread. A worker receives each module
(a compiled ``WebAssembly.Module``) and each shared memory once, by message, and instantiates the module
over that memory when a batch first needs it (its imported functions throw: a kernel calls none). It keeps
the memories of the last two batches' runners (and their instances): two backends launching in turn do
not send their memories again on every launch (which cost a message round trip and new instances). A batch
is written into the control block (the export's name, the calls' arguments as Float64, i64 ones marked),
opened, and announced by bumping a generation word that idle workers wait on with ``Atomics.wait`` (a
wake-up takes microseconds; a message would take a turn of the worker's event loop). Each thread, the
calling one included, takes the next call not yet taken (``Atomics.add``) until none is left; the calling
thread runs its calls in the same JS function, without returning to Python between calls. When it has
taken the last call it seals the batch (no worker enters from then on, so a slow wake-up never delays a
batch) and waits until every worker that entered has left. Before the first batch of a module or a memory
a worker has not received, the calling thread posts it, wakes the workers to read their messages (a
worker waiting on the generation word cannot receive one) and waits until each has, at most 100 ms (a
worker still starting joins later): so that batch runs on every thread too. Which thread runs a call does not
change what it computes: the callers split the work into the same chunks whatever the thread count, so
results are bit-identical to one thread.

Failures: a throwing call stops the batch (no thread takes another call); each thread records the
lowest call index that failed with the exception's name and message in its own slot of the shared
control block, and ``run`` returns the lowest over all threads as ``(index, name, message)`` (None
when every call ran), the failure one thread calling in order meets first. A worker that cannot
instantiate the module stops the batch too, reported with index -2 (JsRunner raises WasmInterfaceError).
Profiling: ``set_tracing(True)`` makes every thread record when it ran each call (and the calling thread
each batch) in the control block, read with ``take_trace`` (benchmarks/browser_threads.py --timeline).

Nothing is copied: the workers read and write the caller's memory. Imports ``pyodide``: use it only
in Pyodide.
"""

from __future__ import annotations

from typing import Any, Callable

from pyodide.code import run_js
from pyodide.ffi import can_run_sync, run_sync

__all__ = ["JsThreadPool", "shared_pool", "thread_support", "batch_failure", "MAX_THREADS"]

#: the most threads a runner uses (the native runner's limit too)
MAX_THREADS = 8
#: the shared control block: Int32 words, then the export's name, the failure messages and the arguments
_LAYOUT = {
    "NEXT": 0, "STOP": 1, "ENTRY": 2, "WORKER_CALLS": 3, "GEN": 4, "COUNT": 5, "PARAMS": 6, "MODULE": 7,
    "MEMORY": 8, "NAME_LENGTH": 9, "I64_MASK": 10, "MAIL": 11, "TRACE": 12, "TRACE_COUNT": 13,
    "FAIL": 16, "ACK": 32,                                      # one word per slot (16 slots) each
    "NAME_BYTES": 256, "MESSAGES": 320, "MESSAGE_BYTES": 480, "SLOTS": 16,
    "ARGS": 320 + 16 * 480, "MAX_ARGS": 1 << 16,                # Float64 arguments of the calls
    "TRACE_RECORDS": 4096,                                      # then Float64 trace records, 4 words each
}

_COMMON = "const L = " + str(_LAYOUT).replace("'", '"') + r""";
const SEALED = 1 << 30;
const KEPT_MEMORIES = 2;
const TRACE_AT = L.ARGS + 8 * L.MAX_ARGS;
// a trace record: (thread slot, call index or -1 for a batch, start, end), times in ms since the epoch
// (performance.timeOrigin + now: comparable across threads)
function now() { return performance.timeOrigin + performance.now(); }
function trace(buffer, slot, index, start, end) {
  const k = Atomics.add(new Int32Array(buffer), L.TRACE_COUNT, 1);
  if (k < L.TRACE_RECORDS) new Float64Array(buffer, TRACE_AT + 32 * k, 4).set([slot, index, start, end]);
}
// the arguments of call i (i64 ones, marked in mask, as BigInt) from the batch's Float64 block, into call
function argumentsOf(args, i, params, mask, call) {
  for (let p = 0; p < params; p++) {
    const value = args[i * params + p];
    call[p] = (mask >> p) & 1 ? BigInt(value) : value;
  }
  return call;
}
function recordFailure(buffer, slot, index, error) {
  const control = new Int32Array(buffer);
  if (control[L.FAIL + slot] === -1 || (index >= 0 && index < control[L.FAIL + slot])) {
    control[L.FAIL + slot] = index;
    const text = new TextEncoder().encode(String(error && error.name) + "\n" + String(error && error.message));
    const bytes = new Uint8Array(buffer, L.MESSAGES + slot * L.MESSAGE_BYTES, L.MESSAGE_BYTES);
    bytes.fill(0);
    bytes.set(text.subarray(0, L.MESSAGE_BYTES - 1));
  }
  Atomics.store(control, L.STOP, 1);
}
"""

#: the worker: waits on the generation word (Atomics.wait), enters each new batch it can serve and takes
#: calls; returns to its event loop when it must receive a module or a memory first, and every 2 s
_WORKER_SOURCE = _COMMON + r"""
let buffer = null, control = null, args = null, slot = 0, seen = 0, retried = -1, mail = 0;
// modules and memories by id; instances by "moduleId/memoryId"
const modules = new Map(), memories = new Map(), instances = new Map();
function dropInstancesOf(memoryId) {
  for (const key of [...instances.keys()]) if (key.endsWith("/" + memoryId)) instances.delete(key);
}
function unavailable() { throw new Error("a worker instance cannot call the host"); }
function instanceOf(moduleId, memoryId) {
  const key = moduleId + "/" + memoryId;
  let found = instances.get(key);
  if (found === undefined) {
    const module = modules.get(moduleId), memory = memories.get(memoryId);
    const imports = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      imports[imp.module] = imports[imp.module] || {};
      imports[imp.module][imp.name] = imp.kind === "memory" ? memory : unavailable;
    }
    found = new WebAssembly.Instance(module, imports);
    instances.set(key, found);
  }
  return found;
}
function work() {
  // entered: the batch's words stay as they are until every worker that entered has left
  const moduleId = control[L.MODULE], memoryId = control[L.MEMORY];
  if (!memories.has(memoryId) || !modules.has(moduleId)) return false;
  let fn;
  try {
    const name = new TextDecoder().decode(new Uint8Array(buffer, L.NAME_BYTES, control[L.NAME_LENGTH]).slice());
    fn = instanceOf(moduleId, memoryId).exports[name];
  } catch (error) {  // a worker that cannot instantiate stops the batch: reported as index -2
    recordFailure(buffer, slot, -2, error);
    return true;
  }
  const count = control[L.COUNT], params = control[L.PARAMS], mask = control[L.I64_MASK];
  const tracing = control[L.TRACE] !== 0;
  const call = new Array(params);
  for (;;) {
    if (Atomics.load(control, L.STOP)) break;
    const i = Atomics.add(control, L.NEXT, 1);
    if (i >= count) break;
    argumentsOf(args, i, params, mask, call);
    try {
      const start = tracing ? now() : 0;
      fn(...call);
      if (tracing) trace(buffer, slot, i, start, now());
      Atomics.add(control, L.WORKER_CALLS, 1);
    } catch (error) {
      recordFailure(buffer, slot, i, error);
      break;
    }
  }
  return true;
}
function serve() {
  for (;;) {
    // the calling thread posted modules or a memory and waits until we have read them
    if (Atomics.load(control, L.MAIL) !== mail) { setTimeout(serve, 0); return; }
    const gen = Atomics.load(control, L.GEN);
    if (gen === seen) {
      if (Atomics.wait(control, L.GEN, gen, 2000) === "timed-out") { setTimeout(serve, 0); return; }
      continue;
    }
    let word = Atomics.load(control, L.ENTRY), entered = false;
    while (!(word & SEALED)) {
      const was = Atomics.compareExchange(control, L.ENTRY, word, word + 1);
      if (was === word) { entered = true; break; }
      word = was;
    }
    if (!entered) { seen = gen; continue; }
    let served;
    try {
      served = work();
    } finally {
      Atomics.sub(control, L.ENTRY, 1);
      Atomics.notify(control, L.ENTRY);
    }
    if (served || retried === gen) { seen = gen; continue; }
    // a module or memory of this batch is still in the message queue: receive it, then come back
    retried = gen;
    setTimeout(serve, 0);
    return;
  }
}
self.onmessage = ({ data }) => {
  if (data.control) {
    buffer = data.control; slot = data.slot;
    control = new Int32Array(buffer);
    args = new Float64Array(buffer, L.ARGS, L.MAX_ARGS);
    seen = Atomics.load(control, L.GEN);
    self.postMessage("started");
  }
  if (data.clearModules) { modules.clear(); instances.clear(); }
  if (data.module) modules.set(data.moduleId, data.module);
  if (data.memory) { memories.set(data.memoryId, data.memory); dropInstancesOf(data.memoryId); }
  if (data.forget) { memories.delete(data.forget); dropInstancesOf(data.forget); }
  if (data.forgetAll) { memories.clear(); instances.clear(); }
  if (data.mail) {
    mail = data.mail;
    Atomics.store(control, L.ACK + slot, mail);
    Atomics.notify(control, L.ACK + slot);
  }
  if (control !== null && !data.control) return;  // serve() runs already (or comes back by a timer)
  serve();
};
"""

#: the calling thread's side: make the workers, run a batch, wait, report the first failure
_POOL_SOURCE = "(workerCount, workerSource) => {\n" + _COMMON + r"""
  const url = URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" }));
  const buffer = new SharedArrayBuffer(TRACE_AT + 32 * L.TRACE_RECORDS);
  const control = new Int32Array(buffer), args = new Float64Array(buffer, L.ARGS, L.MAX_ARGS);
  control[L.ENTRY] = SEALED;
  const workers = [], started = [];
  for (let k = 0; k < workerCount; k++) {
    const worker = new Worker(url);
    started.push(new Promise((resolve) => { worker.onmessage = resolve; worker.onerror = resolve; }));
    worker.postMessage({ control: buffer, slot: k + 1 });
    workers.push({ worker, modules: new Set(), memories: [] });  // memory ids, the most recently used last
  }
  // resolves when every worker runs, or after 10 s (a worker that never starts leaves its batches to the others)
  const ready = Promise.race([Promise.all(started), new Promise((resolve) => setTimeout(resolve, 10000))])
    .then(() => URL.revokeObjectURL(url));
  const ids = new WeakMap();
  let nextId = 1;
  const idOf = (object) => {
    let id = ids.get(object);
    if (id === undefined) { id = nextId++; ids.set(object, id); }
    return id;
  };
  const encoder = new TextEncoder(), decoder = new TextDecoder();
  let mail = 0;
  function send(module, memory) {
    const moduleId = idOf(module), memoryId = idOf(memory);
    let posted = false;
    for (const entry of workers) {
      const at = entry.memories.indexOf(memoryId);
      if (at >= 0) {
        entry.memories.splice(at, 1);
      } else {
        entry.worker.postMessage({ memory, memoryId });
        posted = true;
        // a worker keeps the memories of the last KEPT_MEMORIES batches alive (two backends in turn
        // re-sent theirs on every launch); the oldest is dropped
        if (entry.memories.length >= KEPT_MEMORIES) entry.worker.postMessage({ forget: entry.memories.shift() });
      }
      entry.memories.push(memoryId);
      if (!entry.modules.has(moduleId)) {
        if (entry.modules.size >= 64) { entry.worker.postMessage({ clearModules: true }); entry.modules.clear(); }
        entry.worker.postMessage({ module, moduleId });
        entry.modules.add(moduleId);
        posted = true;
      }
    }
    if (posted) deliver();
    return [moduleId, memoryId];
  }
  // wake the workers to read their messages and wait (at most 100 ms: a worker still starting joins later)
  // until each has: so the first batch of a new module or memory runs on every thread
  function deliver() {
    mail += 1;
    pool.deliveries += 1;
    for (const entry of workers) entry.worker.postMessage({ mail });
    Atomics.store(control, L.MAIL, mail);
    Atomics.add(control, L.GEN, 1);
    Atomics.notify(control, L.GEN);
    const until = performance.now() + 100;
    workers.forEach((entry, k) => {
      for (;;) {
        const seen = Atomics.load(control, L.ACK + k + 1), left = until - performance.now();
        if (seen === mail || left <= 0) break;
        Atomics.wait(control, L.ACK + k + 1, seen, left);
      }
    });
  }
  // one batch of calls start .. start + count - 1 of flat (params numbers per call) on every thread
  function slice(ids, fn, nameBytes, flat, start, count, params, mask, failures) {
    for (let k = 0, at = start * params; k < count * params; k++) args[k] = flat[at + k];
    control[L.NEXT] = 0; control[L.STOP] = 0; control[L.WORKER_CALLS] = 0;
    control[L.COUNT] = count; control[L.PARAMS] = params; control[L.MODULE] = ids[0]; control[L.MEMORY] = ids[1];
    control[L.I64_MASK] = mask;
    new Uint8Array(buffer, L.NAME_BYTES, nameBytes.length).set(nameBytes);
    control[L.NAME_LENGTH] = nameBytes.length;
    for (let s = 0; s < L.SLOTS; s++) control[L.FAIL + s] = -1;
    const tracing = control[L.TRACE] !== 0, opened = tracing ? now() : 0;
    const call = new Array(params);
    Atomics.store(control, L.ENTRY, 0);           // open: workers may enter from now on
    Atomics.add(control, L.GEN, 1);
    Atomics.notify(control, L.GEN);
    for (;;) {
      if (Atomics.load(control, L.STOP)) break;
      const i = Atomics.add(control, L.NEXT, 1);
      if (i >= count) break;
      argumentsOf(args, i, params, mask, call);
      try {
        const begin = tracing ? now() : 0;
        fn(...call);
        if (tracing) trace(buffer, 0, i, begin, now());
      } catch (error) {
        recordFailure(buffer, 0, i, error);
        break;
      }
    }
    // no worker enters from now on; wait for those inside to leave
    let word = Atomics.or(control, L.ENTRY, SEALED) | SEALED;
    while ((word & ~SEALED) !== 0) {
      Atomics.wait(control, L.ENTRY, word);
      word = Atomics.load(control, L.ENTRY);
    }
    if (tracing) trace(buffer, 0, -1, opened, now());
    pool.workerCalls += control[L.WORKER_CALLS];
    for (let s = 0; s <= workers.length; s++) {
      const index = control[L.FAIL + s];
      if (index !== -1 && (failures.length === 0 || index < failures[0])) {
        const raw = new Uint8Array(buffer, L.MESSAGES + s * L.MESSAGE_BYTES, L.MESSAGE_BYTES).slice();
        const end = raw.indexOf(0);
        const [kind, ...rest] = decoder.decode(end < 0 ? raw : raw.subarray(0, end)).split("\n");
        failures.splice(0, 3, index, kind, rest.join("\n"));
      }
    }
  }
  const pool = {
    ready,
    workerCalls: 0,
    deliveries: 0,
    setTracing(on) { control[L.TRACE] = on ? 1 : 0; control[L.TRACE_COUNT] = 0; },
    takeTrace() {
      const k = Math.min(control[L.TRACE_COUNT], L.TRACE_RECORDS);
      control[L.TRACE_COUNT] = 0;
      return Array.from(new Float64Array(buffer, TRACE_AT, 4 * k));
    },
    forget() { for (const entry of workers) { entry.worker.postMessage({ forgetAll: true }); entry.memories = []; } },
    // the batch runner of one export: called with the number of calls and their arguments (params numbers
    // per call, one after the other, in an array or a typed array); returns undefined, or [first failing
    // call, error name, message]. Its .spread takes the arguments as arguments (no array to convert)
    batch(module, memory, exports, name, params, mask) {
      const fn = exports[name], nameBytes = encoder.encode(name).subarray(0, 64);
      const per = Math.max(1, Math.floor(L.MAX_ARGS / Math.max(1, params)));
      const run = (total, flat) => {
        const ids = send(module, memory), failures = [];
        for (let start = 0; start < total && failures.length === 0; start += per) {
          slice(ids, fn, nameBytes, flat, start, Math.min(per, total - start), params, mask, failures);
          if (failures.length && failures[0] >= 0) failures[0] += start;
        }
        return failures.length ? failures : undefined;  // undefined reaches Python as None
      };
      run.spread = (total, ...flat) => run(total, flat);
      return run;
    },
    // the imported function of a ParallelDispatch (wasm_backend/parallel_dispatch.py): plan(...args) (Python)
    // returns [batch runner, calls, their arguments as a Float64Array, export name], kept by the arguments
    // (at most kept of them), or undefined when it ran the calls itself (nothing kept); a failing batch
    // calls fail(export name, failure), which raises the Python error
    dispatcher(plan, fail, count, kept) {
      const plans = new Map();
      return (...args) => {
        count.value += 1;
        const key = args.join(",");
        let found = plans.get(key);
        if (found === undefined) {
          found = plan(...args);
          if (found === undefined) return;
          if (plans.size >= kept) plans.clear();
          plans.set(key, found);
        }
        const failed = found[0](found[1], found[2]);
        if (failed !== undefined) fail(found[3], failed);
      };
    },
  };
  return pool;
}
"""

_PROBE_SOURCE = r"""
(() => {
  if (typeof crossOriginIsolated === "undefined" || !crossOriginIsolated || typeof SharedArrayBuffer === "undefined")
    return [1, "the page is not cross-origin isolated (the server must send COOP: same-origin and " +
               "COEP: require-corp), so no memory can be shared"];
  if (typeof WorkerGlobalScope === "undefined" || !(self instanceof WorkerGlobalScope))
    return [1, "Python runs on the page's thread, where the browser refuses to wait (Atomics.wait); " +
               "run it in a worker (the demo page and JupyterLite do)"];
  if (typeof Worker === "undefined")
    return [1, "this context cannot start Web Workers"];
  return [Math.max(1, navigator.hardwareConcurrency || 1), ""];
})()
"""


def thread_support(requested: int | None) -> tuple[int, str]:
    """``(threads, reason)``: the threads a runner asked for ``requested`` (None: the browser's core count)
    runs on here, at most MAX_THREADS, and why it is 1 when threads cannot run ("" otherwise)."""
    available, reason = run_js(_PROBE_SOURCE).to_py()
    if available <= 1 and reason:
        return 1, reason
    threads = min(MAX_THREADS, int(available) if requested is None else requested)
    return max(1, threads), ""


class JsThreadPool:
    """``threads - 1`` Web Workers that, with the calling thread, run the calls of one batch (see the module
    docstring). Get one with ``shared_pool``: one pool per thread count serves every runner of this Python
    (a batch is one synchronous JS call, so batches never interleave). The constructor raises JsException
    when the workers cannot start (JsRunner then runs on one thread and says why)."""

    def __init__(self, threads: int) -> None:
        self._pool = run_js(_POOL_SOURCE)(threads - 1, _WORKER_SOURCE)
        self.threads = threads
        self._waited = False

    def wait_until_started(self) -> None:
        """Where JS Promise Integration lets this call wait (``can_run_sync()``: Python entered through
        ``runPythonAsync`` or a coroutine), wait until every worker runs (at most 10 s): a browser starts a
        worker of a worker only when its creator's event loop turns, so without this wait the workers join
        only after the Python code that made them has yielded once. Elsewhere return at once."""
        if not self._waited and can_run_sync():
            run_sync(self._pool.ready)
            self._waited = True

    @property
    def worker_calls(self) -> int:
        """Calls that workers (not the calling thread) ran so far."""
        return int(self._pool.workerCalls)

    @property
    def deliveries(self) -> int:
        """How many times a batch first sent the workers a module or a memory (and waited until they had it)."""
        return int(self._pool.deliveries)

    def batch(self, module: Any, memory: Any, exports: Any, export_name: str, params: int,
              i64_mask: int = 0) -> Callable[[list[tuple]], tuple[int, str, str] | None]:
        """The runner of batches of ``exports[export_name]`` (``params`` parameters; ``i64_mask``: bit p set where
        parameter p is an i64) of ``module``'s instance over ``memory``: a function of ``argument_lists`` (a
        list of tuples of numbers, unchecked; i64 ones below 2**53 - 1 in magnitude, as they travel as Float64:
        from there on Pyodide passes a BigInt and this raises JsException; JsRunner checks them)
        that runs every call on the threads and returns None, or (first failing index, exception name,
        message); index -2: a worker could not instantiate the module. Make one per export and keep it: a
        batch then converts nothing but the numbers."""
        run = self.batch_function(module, memory, exports, export_name, params, i64_mask).spread

        def run_batch(argument_lists: list[tuple]) -> tuple[int, str, str] | None:
            failed = run(len(argument_lists), *[value for arguments in argument_lists for value in arguments])
            return None if failed is None else batch_failure(failed)

        return run_batch

    def batch_function(self, module: Any, memory: Any, exports: Any, export_name: str, params: int,
                       i64_mask: int = 0) -> Any:
        """The JS batch runner behind ``batch``: ``run(calls, arguments)`` with the calls' arguments flat (an
        array or a Float64Array of ``calls * params`` numbers), returning undefined or ``[first failing index,
        exception name, message]``; ``run.spread(calls, *arguments)`` takes them as arguments."""
        return self._pool.batch(module, memory, exports, export_name, params, i64_mask)

    def dispatcher(self, plan: Any, fail: Any, count: Any, kept: int) -> Any:
        """The JS function imported for a ParallelDispatch (see the pool's ``dispatcher``): ``plan`` and
        ``fail`` are proxies of Python functions, ``count`` a JS object whose ``value`` it increments."""
        return self._pool.dispatcher(plan, fail, count, kept)

    def set_tracing(self, on: bool) -> None:
        """Record (or stop recording) when each call of the following batches ran on which thread (a profiling
        aid: two clock readings per call; see take_trace). Clears the records."""
        self._pool.setTracing(bool(on))

    def take_trace(self) -> list[tuple[int, int, float, float]]:
        """The records since set_tracing or the last take_trace, and clears them: ``(thread, call index,
        start ms, end ms)``, thread 0 the calling thread, index -1 a whole batch (opened until every worker
        left); times in ms since the epoch, comparable across threads. At most 4096 records are kept."""
        flat = self._pool.takeTrace().to_py()
        return [(int(flat[k]), int(flat[k + 1]), flat[k + 2], flat[k + 3]) for k in range(0, len(flat), 4)]

    def forget(self) -> None:
        """Drop the workers' memories and instances (a closed runner's memory must not stay alive in them;
        the memories of other runners are sent again by their next batch)."""
        self._pool.forget()


_POOLS: dict[int, JsThreadPool] = {}


def batch_failure(failed: Any) -> tuple[int, str, str]:
    """A JS batch runner's failure (``[first failing index, exception name, message]``) as a Python tuple."""
    index, name, message = failed.to_py()
    return int(index), str(name), str(message)


def shared_pool(threads: int) -> JsThreadPool:
    """The pool of ``threads`` threads of this Python, started on first use (raises JsException when the
    browser refuses to start workers). Its workers live as long as the page or worker that runs Python."""
    pool = _POOLS.get(threads)
    if pool is None:
        pool = _POOLS[threads] = JsThreadPool(threads)
    return pool
