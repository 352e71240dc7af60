"""Ctrl-C inside a long wasmtime call: epoch interruption with a deadline callback that sees SIGINT.

Natively a signal reaches Python only between bytecodes, and a thread inside a wasmtime call runs no
bytecode until the call returns, so a KeyboardInterrupt would wait for the end of the launch. The engine is
made with epoch interruption on; one daemon thread for the process (``EpochTicker``) increments the epoch of
every live engine every ``TICK_SECONDS``. Each Store gets a deadline one tick ahead and a deadline callback
(``EpochGuard``) that runs, in Python, on the thread running the call. ``call_interruptibly`` runs a call on
the main thread with a SIGINT handler of its own that only marks the guard (Python runs it when the callback
is entered); the callback then makes the call fail, and once the call has returned the previous handler is
put back and given the signal (the default one raises KeyboardInterrupt; SIG_DFL ends the process as it
would have; SIG_IGN was never replaced). Unmarked, the callback renews the deadline one tick ahead. On other
threads nothing is replaced (Python delivers signals to the main thread only; the worker pool stops a batch
between calls, see ``worker_pool``).

What an interrupted call leaves: whatever it had written to memory before the tick that stopped it (a
partial write, as with the threaded maps); the store, the instance and the memory stay usable.

Cost: wasmtime checks the epoch at function entries and loop headers (a load and a compare); the callback
runs a few microseconds ``1 / TICK_SECONDS`` times a second of running code; a call on the main thread
swaps the SIGINT handler twice (about two microseconds).
"""

from __future__ import annotations

import ctypes
import os
import signal
import _signal  # the C functions: signal.signal's enum conversions cost microseconds per call
import threading
import time
import weakref
from typing import Any, Callable

import wasmtime
from wasmtime import _ffi as ffi

__all__ = ["TICK_SECONDS", "EpochGuard", "EpochTicker", "guard_store", "call_interruptibly"]

#: how often every engine's epoch advances (the latency of a Ctrl-C inside a call, at most about this)
TICK_SECONDS = 0.1
_SIGINT = int(signal.SIGINT)
_MAIN_THREAD = threading.main_thread().ident
#: wasmtime_update_deadline_kind_t: go on running with the new deadline
_CONTINUE = 0

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.POINTER(ffi.wasmtime_context_t), ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t))
_NO_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(0)


class EpochGuard:
    """The deadline callback of one Store and the SIGINT it saw during its call (``signalled``)."""

    __slots__ = ("signalled", "previous", "callback", "__weakref__")

    def __init__(self) -> None:
        self.signalled: tuple[int, Any] | None = None
        self.previous: Any = None
        self.callback = _CALLBACK(self._on_deadline)

    def on_signal(self, signum: int, frame: Any) -> None:
        """The SIGINT handler while a call of this guard's store runs on the main thread: in the deadline
        callback it marks the guard; in Python the call runs (an imported host function) it is the previous
        handler, so the interrupt is raised there as before."""
        if frame is not None and frame.f_code is _DEADLINE_CODE or not callable(self.previous):
            self.signalled = (signum, frame)
        else:
            self.previous(signum, frame)

    def _on_deadline(self, _context: Any, _data: Any, delta: Any, kind: Any) -> int:
        # Python has run a pending SIGINT handler (on_signal) on entering this function
        delta[0] = 1
        kind[0] = _CONTINUE
        if self.signalled is not None:
            return ctypes.cast(ffi.wasmtime_error_new(b"interrupted by SIGINT"), ctypes.c_void_p).value or 0
        return 0


_DEADLINE_CODE = EpochGuard._on_deadline.__code__


class EpochTicker:
    """One daemon thread incrementing the epoch of every registered engine every TICK_SECONDS; it holds the
    engines weakly and ends when none is left (a later ``register`` starts a new one)."""

    _lock = threading.Lock()
    _engines: "weakref.WeakSet[wasmtime.Engine]" = weakref.WeakSet()
    _thread: threading.Thread | None = None

    @classmethod
    def register(cls, engine: "wasmtime.Engine") -> None:
        with cls._lock:
            cls._engines.add(engine)
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._tick, name="wasmtime-epoch", daemon=True)
                cls._thread.start()

    @classmethod
    def _tick(cls) -> None:
        while True:
            time.sleep(TICK_SECONDS)
            with cls._lock:
                engines = list(cls._engines)
                if not engines:
                    cls._thread = None
                    return
            for engine in engines:
                engine.increment_epoch()
            del engines


def guard_store(store: "wasmtime.Store") -> EpochGuard:
    """Installs a new EpochGuard on ``store`` (deadline one tick ahead) and returns it; the caller keeps it
    as long as the store (the callback must outlive every call)."""
    guard = EpochGuard()
    ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), guard.callback, None, _NO_FINALIZER)
    store.set_epoch_deadline(1)
    return guard


def call_interruptibly(guard: EpochGuard | None, action: Callable[[], Any]) -> Any:
    """``action()`` (a call into the guard's store); on the main thread a SIGINT during it stops it at the
    next tick and, once it has returned or raised, is handed to the SIGINT handler that was installed (the
    default raises KeyboardInterrupt, which then replaces what the call raised)."""
    if guard is None or threading.get_ident() != _MAIN_THREAD:
        return action()
    previous = _signal.getsignal(_SIGINT)
    if previous == _signal.SIG_IGN or previous is None:  # ignored, or a handler not installed from Python
        return action()
    guard.signalled, guard.previous = None, previous
    _signal.signal(_SIGINT, guard.on_signal)
    try:
        return action()
    finally:
        _signal.signal(_SIGINT, previous)
        seen, guard.signalled = guard.signalled, None
        if seen is not None:
            if previous == _signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)  # what the signal would have done
            else:
                previous(*seen)
