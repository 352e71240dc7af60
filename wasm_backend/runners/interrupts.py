"""Ctrl-C (or any signal with a Python handler) inside a long wasmtime call: epoch interruption with a deadline
callback that sees it.

Natively a signal reaches Python only between bytecodes, and a thread inside a wasmtime call runs no
bytecode until the call returns, so a KeyboardInterrupt would wait for the end of the launch. The engine is
made with epoch interruption on; one daemon thread for the process (``EpochTicker``) increments the epoch of
every live engine every ``TICK_SECONDS``. Each Store gets a deadline one tick ahead and a deadline callback
(``EpochGuard``) that runs, in Python, on the thread running the call. Python runs a pending signal's handler
when that callback is entered, and an exception raised there could not leave it (ctypes reports it as
"ignored" and the callback returns an undefined value: SIGALRM's timeout was lost). So ``call_interruptibly``
runs a call on the main thread with every Python handler of a standard signal (SIGINT's default one included;
SIG_DFL and SIG_IGN are not Python handlers and stay; real-time signals are not looked at) replaced by one of its own: in the callback it only marks the guard,
anywhere else (Python the call runs: an imported host function) it calls the handler it replaced. The callback
then gives each signal it saw to its handler, inside a ``try``: when one raises (the default SIGINT one raises
KeyboardInterrupt) the callback makes the call fail, and once the call has returned the handlers are put back
and that exception (the first) is raised; a handler that returns lets the call go on. The callback renews the
deadline one tick ahead. On other threads nothing is replaced (Python delivers signals to the main thread only; the worker pool
stops a batch between calls, see ``worker_pool``).

What an interrupted call leaves: whatever it had written to memory before the tick that stopped it (a
partial write, as with the threaded maps); the store, the instance and the memory stay usable.

Cost: wasmtime checks the epoch at function entries and loop headers (a load and a compare); the callback
runs a few microseconds ``1 / TICK_SECONDS`` times a second of running code; a call on the main thread reads
the handler of each of the 29 standard signals and swaps each Python one twice: measured interleaved on this
shared 2-core machine, 2.8 us per call when only SIGINT was swapped, 10.9 us now (one-lane no-op launch: about
15 us of host overhead unloaded).
"""

from __future__ import annotations

import ctypes
import signal
import _signal  # the C functions: signal.signal's enum conversions cost microseconds per call
import threading
import time
import weakref
from typing import Any, Callable

import wasmtime
from wasmtime import _ffi as ffi

__all__ = ["TICK_SECONDS", "EpochGuard", "TickedEngine", "EpochTicker", "guard_store", "call_interruptibly"]

#: how often every engine's epoch advances (the latency of a Ctrl-C inside a call, at most about this)
TICK_SECONDS = 0.1
#: the signals whose handler a call on the main thread looks at: the standard ones (SIGKILL and SIGSTOP have
#: none; the real-time signals, from SIGRTMIN, are left out: reading their 30 handlers per call cost as much
#: as the rest of a launch's host overhead, and a Python handler of one is rare)
_SIGNALS = tuple(int(s) for s in signal.valid_signals()
                 if s not in (signal.SIGKILL, signal.SIGSTOP) and s < getattr(signal, "SIGRTMIN", signal.NSIG))
_MAIN_THREAD = threading.main_thread().ident
#: the handlers of _SIGNALS the last call found and the Python ones among them (signal -> handler)
_last_handlers: tuple[tuple, dict[int, Any]] = ((), {})
#: wasmtime_update_deadline_kind_t: go on running with the new deadline
_CONTINUE = 0

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.POINTER(ffi.wasmtime_context_t), ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t))
_NO_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(0)


class EpochGuard:
    """The deadline callback of one Store, the handlers its call replaced (``previous``: signal -> handler), the
    signals seen in the callback not yet given to their handler (``signalled``: (signal, frame) in order) and
    the first exception a handler raised there (``raised``)."""

    __slots__ = ("signalled", "previous", "raised", "callback", "__weakref__")

    def __init__(self) -> None:
        self.signalled: list[tuple[int, Any]] = []
        self.previous: dict[int, Any] = {}
        self.raised: BaseException | None = None
        self.callback = _CALLBACK(self._on_deadline)

    def on_signal(self, signum: int, frame: Any) -> None:
        """The handler of every signal that had a Python one while a call of this guard's store runs on the
        main thread: in the deadline callback it marks the guard; in Python the call runs (an imported host
        function) it is the replaced handler, so what it raises is raised there as before."""
        previous = self.previous.get(signum)
        if frame is not None and frame.f_code is _DEADLINE_CODE or not callable(previous):
            self.signalled.append((signum, frame))
        else:
            previous(signum, frame)

    def _on_deadline(self, _context: Any, _data: Any, delta: Any, kind: Any) -> int:
        # Python has run the pending signals' handlers (on_signal: they only mark) on entering this function
        delta[0] = 1
        kind[0] = _CONTINUE
        while self.signalled:
            signum, frame = self.signalled.pop(0)
            try:
                self.previous[signum](signum, frame)
            except BaseException as exc:  # noqa: BLE001 -- nothing may leave a ctypes callback: raised after the call
                if self.raised is None:
                    self.raised = exc
        if self.raised is not None:
            return ctypes.cast(ffi.wasmtime_error_new(b"interrupted by a signal"), ctypes.c_void_p).value or 0
        return 0


_DEADLINE_CODE = EpochGuard._on_deadline.__code__


class TickedEngine(wasmtime.Engine):
    """A wasmtime Engine that EpochTicker ticks. wasmtime-py frees an engine (``close``, or ``__del__`` before the
    weak references to it are cleared) in a ctypes call that lets other threads run, and clears its pointer only
    after: the ticker could take the dying engine from its weak set and increment a freed engine (a segfault seen
    once in a whole-suite run). Deleting one takes the ticker's lock and marks it deleted first; the ticker
    increments under that lock and skips a deleted one."""

    deleted = False

    def _delete(self, ptr: Any) -> None:
        with EpochTicker.lock:
            self.deleted = True
            super()._delete(ptr)


class EpochTicker:
    """One daemon thread incrementing the epoch of every registered engine every TICK_SECONDS; it holds the
    engines weakly and ends when none is left (a later ``new_engine`` starts a new one)."""

    #: held while engines are incremented and while one is deleted (reentrant: an engine may be collected on
    #: the ticker's own thread)
    lock = threading.RLock()
    _engines: "weakref.WeakSet[TickedEngine]" = weakref.WeakSet()
    _thread: threading.Thread | None = None

    @classmethod
    def new_engine(cls, config: "wasmtime.Config") -> TickedEngine:
        """A TickedEngine of ``config`` (epoch interruption on), registered: its epoch advances every tick."""
        engine = TickedEngine(config)
        with cls.lock:
            cls._engines.add(engine)
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._tick, name="wasmtime-epoch", daemon=True)
                cls._thread.start()
        return engine

    @classmethod
    def tick(cls) -> bool:
        """Increment the epoch of every live engine once; False (and the thread forgotten) when none is left."""
        with cls.lock:
            engines = [engine for engine in cls._engines if not engine.deleted]
            if not engines:
                cls._thread = None
                return False
            for engine in engines:
                engine.increment_epoch()
        return True

    @classmethod
    def _tick(cls) -> None:
        while True:
            time.sleep(TICK_SECONDS)
            if not cls.tick():
                return


def guard_store(store: "wasmtime.Store") -> EpochGuard:
    """Installs a new EpochGuard on ``store`` (deadline one tick ahead) and returns it; the caller keeps it
    as long as the store (the callback must outlive every call)."""
    guard = EpochGuard()
    ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), guard.callback, None, _NO_FINALIZER)
    store.set_epoch_deadline(1)
    return guard


def call_interruptibly(guard: EpochGuard | None, action: Callable[[], Any]) -> Any:
    """``action()`` (a call into the guard's store); on the main thread a signal with a Python handler (SIGINT,
    SIGALRM, ...) during it stops it at the next tick and, once it has returned or raised, is handed to that
    handler; what a handler raises (the default SIGINT one: KeyboardInterrupt) then replaces what the call
    raised. A signal left to SIG_DFL does what it does (SIGINT, SIGTERM: the process ends); SIG_IGN, nothing."""
    if guard is None or threading.get_ident() != _MAIN_THREAD:
        return action()
    global _last_handlers
    handlers = tuple(map(_signal.getsignal, _SIGNALS))
    if handlers != _last_handlers[0]:
        _last_handlers = (handlers, {s: h for s, h in zip(_SIGNALS, handlers) if callable(h)})
    replaced = _last_handlers[1]
    if not replaced:
        return action()
    guard.signalled, guard.previous, guard.raised = [], replaced, None
    for signum in replaced:
        _signal.signal(signum, guard.on_signal)
    try:
        return action()
    finally:
        for signum, handler in replaced.items():
            _signal.signal(signum, handler)
        seen, raised = guard.signalled, guard.raised
        guard.signalled, guard.previous, guard.raised = [], {}, None
        for signum, frame in seen:  # marked after the callback's last run: given to their handlers now
            handler = replaced[signum]
            if raised is None:
                try:
                    handler(signum, frame)
                except BaseException as exc:  # noqa: BLE001 -- the first is raised below
                    raised = exc
        if raised is not None:
            raise raised
