"""JsThreadPool: the browser runner's worker threads, a pool of Web Workers over one shared memory.

Where threads can run. A batch waits for its workers with ``Atomics.wait``, which the browser allows
only off the page's thread, and the memory must be a shared ``WebAssembly.Memory``, which needs
cross-origin isolation. ``thread_support(requested)`` therefore answers ``(threads, reason)``: the
threads a JsRunner runs on (``requested``, None meaning ``navigator.hardwareConcurrency``; at most
``MAX_THREADS``) and, when that is 1, why (the page is not cross-origin isolated; Python runs on the
page's thread, where waiting is refused; the context cannot start workers). The demo page and
JupyterLite run their Python in a worker, so both get threads on a cross-origin isolated site (the
site's server sends COOP/COEP); the page's thread itself is never blocked.

How a batch runs (``JsThreadPool.run``): the workers (``threads - 1``, started from a Blob URL, so
nothing but this module is needed; one pool per thread count serves every runner: ``shared_pool``) receive the batch as one message: the module (a
compiled ``WebAssembly.Module``, sent once per worker), the shared memory, the export's name and the
argument lists. Each worker instantiates the module once over that memory (its imported functions
throw: a kernel calls none) and, like the calling thread, takes the next call not yet taken
(``Atomics.add`` on a shared counter) until none is left. The calling thread runs calls in the same
JS function, without returning to Python between calls. A worker that has not yet started when the
calling thread has taken the last call does not enter the batch (an entry word with a sealed bit), so
a slow worker start never delays a batch; the calling thread then waits until every worker that did
enter has left. Which thread runs a call does not change what it computes: the callers split the work
into the same chunks whatever the thread count, so results are bit-identical to one thread.

Failures: a throwing call stops the batch (no thread takes another call); each thread records the
lowest call index that failed with the exception's name and message in its own slot of the shared
control block, and ``run`` returns the lowest over all threads as ``(index, name, message)`` (None
when every call ran), the failure one thread calling in order meets first. A worker that cannot
instantiate the module stops the batch too, reported with index -2 (JsRunner raises WasmInterfaceError). Nothing is copied: the
workers read and write the caller's memory. Imports ``js`` and ``pyodide``: use it only in Pyodide.
"""

from __future__ import annotations

from typing import Any

from pyodide.code import run_js
from pyodide.ffi import can_run_sync, run_sync, to_js

__all__ = ["JsThreadPool", "shared_pool", "thread_support", "MAX_THREADS"]

#: the most threads a runner uses (the native runner's limit too)
MAX_THREADS = 8
#: bytes of each thread's failure message in the control block
_MESSAGE_BYTES = 480

#: the worker's script: instantiate once per (module, memory), then run the calls of each batch it enters
_WORKER_SOURCE = r"""
"use strict";
const instances = new Map();
const MESSAGE_BYTES = %(message_bytes)d;
const SEALED = 1 << 30;
function unavailable() { throw new Error("a worker instance cannot call the host"); }
let lastMemory = 0;
function instance(data) {
  // instances of one memory only: those of a memory no longer used must not keep it alive
  if (data.memoryId !== lastMemory) { instances.clear(); lastMemory = data.memoryId; }
  const key = data.moduleId;
  let found = instances.get(key);
  if (found === undefined) {
    const module = self.atlasModules.get(data.moduleId);
    const imports = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      imports[imp.module] = imports[imp.module] || {};
      imports[imp.module][imp.name] = imp.kind === "memory" ? data.memory : unavailable;
    }
    if (instances.size >= 32) instances.clear();
    found = new WebAssembly.Instance(module, imports);
    instances.set(key, found);
  }
  return found;
}
self.atlasModules = new Map();
self.postMessage("started");
function record(data, index, error) {
  const control = new Int32Array(data.control);
  const slot = data.slot;
  if (control[8 + slot] === -1 || (index >= 0 && index < control[8 + slot])) {
    control[8 + slot] = index;
    const text = new TextEncoder().encode(String(error && error.name) + "\n" + String(error && error.message));
    const bytes = new Uint8Array(data.control, 64 + 4 * 16 + slot * MESSAGE_BYTES, MESSAGE_BYTES);
    bytes.fill(0);
    bytes.set(text.subarray(0, MESSAGE_BYTES - 1));
  }
}
self.onmessage = ({ data }) => {
  if (data.forget) { instances.clear(); lastMemory = 0; return; }
  if (data.module) self.atlasModules.set(data.moduleId, data.module);
  const control = new Int32Array(data.control);
  // enter unless the calling thread has taken the last call already (then this batch is over for us)
  for (;;) {
    const word = Atomics.load(control, 2);
    if (word & SEALED) return;
    if (Atomics.compareExchange(control, 2, word, word + 1) === word) break;
  }
  try {
    let fn;
    try {
      fn = instance(data).exports[data.exportName];
    } catch (error) {  // a worker that cannot instantiate stops the batch: reported as index -2
      Atomics.store(control, 1, 1);
      record(data, -2, error);
      return;
    }
    const items = data.items;
    for (;;) {
      if (Atomics.load(control, 1)) break;
      const i = Atomics.add(control, 0, 1);
      if (i >= items.length) break;
      try {
        fn(...items[i]);
        Atomics.add(control, 3, 1);
      } catch (error) {
        Atomics.store(control, 1, 1);
        record(data, i, error);
        break;
      }
    }
  } finally {
    Atomics.sub(control, 2, 1);
    Atomics.notify(control, 2);
  }
};
"""

#: the calling thread's side: make the workers, run a batch, wait, report the first failure
_POOL_SOURCE = r"""
(workerCount, workerSource, messageBytes) => {
  const url = URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" }));
  const workers = [];
  const started = [];
  for (let k = 0; k < workerCount; k++) {
    const worker = new Worker(url);
    started.push(new Promise((resolve) => { worker.onmessage = resolve; worker.onerror = resolve; }));
    workers.push({ worker, modules: new WeakSet() });
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
  const SEALED = 1 << 30;
  const decoder = new TextDecoder();
  return {
    ready,
    workerCalls: 0,
    forget() { for (const entry of workers) entry.worker.postMessage({ forget: true }); },
    run(module, memory, exports, exportName, items) {
      const slots = workers.length + 1;
      const buffer = new SharedArrayBuffer(64 + 4 * 16 + slots * messageBytes);
      const control = new Int32Array(buffer);
      for (let s = 0; s < 16; s++) control[8 + s] = -1;
      const moduleId = idOf(module), memoryId = idOf(memory);
      workers.forEach((entry, k) => {
        const first = !entry.modules.has(module);
        entry.modules.add(module);
        entry.worker.postMessage({ control: buffer, slot: k + 1, moduleId, memoryId, memory,
                                   module: first ? module : null, exportName, items });
      });
      const fn = exports[exportName];
      let mine = 0;
      for (;;) {
        if (Atomics.load(control, 1)) break;
        const i = Atomics.add(control, 0, 1);
        if (i >= items.length) break;
        try {
          fn(...items[i]);
          mine++;
        } catch (error) {
          Atomics.store(control, 1, 1);
          control[8] = i;
          const text = new TextEncoder().encode(String(error && error.name) + "\n" + String(error && error.message));
          new Uint8Array(buffer, 64 + 4 * 16, messageBytes).set(text.subarray(0, messageBytes - 1));
          break;
        }
      }
      // no worker enters from now on; wait for those inside to leave
      let word = Atomics.or(control, 2, SEALED) | SEALED;
      while ((word & ~SEALED) !== 0) {
        Atomics.wait(control, 2, word);
        word = Atomics.load(control, 2);
      }
      this.workerCalls += Atomics.load(control, 3);
      let failed = null;
      for (let s = 0; s < slots; s++) {
        const index = control[8 + s];
        if (index !== -1 && (failed === null || index < failed[0])) {
          const bytes = new Uint8Array(buffer, 64 + 4 * 16 + s * messageBytes, messageBytes).slice();
          const end = bytes.indexOf(0);
          const [name, ...rest] = decoder.decode(end < 0 ? bytes : bytes.subarray(0, end)).split("\n");
          failed = [index, name, rest.join("\n")];
        }
      }
      return failed === null ? undefined : failed;  // undefined reaches Python as None
    },
    close() { for (const entry of workers) entry.worker.terminate(); workers.length = 0; },
  };
}
"""

_PROBE_SOURCE = r"""
(() => {
  if (typeof crossOriginIsolated === "undefined" || !crossOriginIsolated || typeof SharedArrayBuffer === "undefined")
    return [1, "the page is not cross-origin isolated (the server must send COOP: same-origin and COEP: require-corp), so no memory can be shared"];
  if (typeof WorkerGlobalScope === "undefined" || !(self instanceof WorkerGlobalScope))
    return [1, "Python runs on the page's thread, where the browser refuses to wait (Atomics.wait); run it in a worker (the demo page and JupyterLite do)"];
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
        factory = run_js(_POOL_SOURCE)
        self._pool = factory(threads - 1, _WORKER_SOURCE % {"message_bytes": _MESSAGE_BYTES}, _MESSAGE_BYTES)
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

    def run(self, module: Any, memory: Any, exports: Any, export_name: str, argument_lists: list[list]
            ) -> tuple[int, str, str] | None:
        """Run ``exports[export_name](*args)`` for every list of JS values in ``argument_lists`` on the
        threads; returns None, or (first failing index, exception name, message); index -2: a worker could
        not instantiate the module."""
        failed = self._pool.run(module, memory, exports, export_name, to_js(argument_lists))
        if failed is None:
            return None
        index, name, message = failed.to_py()
        return int(index), str(name), str(message)

    def forget(self) -> None:
        """Drop the workers' instances (a closed runner's memory must not stay alive in them)."""
        self._pool.forget()


_POOLS: dict[int, JsThreadPool] = {}


def shared_pool(threads: int) -> JsThreadPool:
    """The pool of ``threads`` threads of this Python, started on first use (raises JsException when the
    browser refuses to start workers). Its workers live as long as the page or worker that runs Python."""
    pool = _POOLS.get(threads)
    if pool is None:
        pool = _POOLS[threads] = JsThreadPool(threads)
    return pool
