"""Ctrl-C inside one long wasmtime call (a real SIGINT): the one-lane-at-a-time code of a runaway loop stops
within seconds with KeyboardInterrupt, and the backend runs the next launch (issue 17 item 7). Before epoch
interruption the interrupt waited for the end of the call."""

from __future__ import annotations

import signal
import threading
import time

from atlas_web import AtlasTrap, LaunchConfig, Program, TrapCode
from atlas_web.isa import Type
from atlas_web.launch import ExecutionParams
from wasm_backend import WasmBackend

#: a loop with no end but the budget: billions of backward jumps are minutes of work
RUNAWAY = """
    mov_imm.u32 r1, 1
    mov_imm.u32 r2, 0
top:
    add.u32 r2, r2, r1
    bra @top
"""
#: how long the runaway launch would take at least, were it not stopped (not a timing assertion: the bound
#: a stopped launch must beat is PATIENCE, tens of times the tick)
BUDGET = 1 << 40
PATIENCE = 5.0


def test_keyboard_interrupt_stops_a_runaway_launch_and_the_backend_stays_usable():
    # Python's own SIGINT handler whatever this process inherited: started in the background by a
    # non-interactive shell, a process ignores SIGINT, and an ignored Ctrl-C must not stop the launch
    # (call_interruptibly leaves SIG_IGN alone), so the runaway loop would run to the test's timeout
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    backend = WasmBackend(budget=BUDGET)
    try:
        config = LaunchConfig()
        sent: list[float] = []

        def interrupt() -> None:
            sent.append(time.monotonic())
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        timer = threading.Timer(0.5, interrupt)
        timer.start()
        caught = None
        try:
            backend.execute_program_with_params(Program.from_text(RUNAWAY), ExecutionParams(config))
        except KeyboardInterrupt:
            caught = time.monotonic()
        finally:
            timer.cancel()
        assert caught is not None, "the runaway launch ended without the interrupt"
        assert sent and caught - sent[0] < PATIENCE
        # the backend is usable: a launch after the interrupt runs and writes its output
        out = backend.allocate_typed(1, Type.U32)
        backend.execute_program(Program.from_text(f"mov_imm.u64 r1, {int(out) << 32}\nmov_imm.u32 r2, 7\nstg.u32 [r1 + 0], r2"), config)
        assert list(backend.copy_typed_from(out, Type.U32)) == [7]
    finally:
        backend.close()
        signal.signal(signal.SIGINT, inherited)


class _Alarm(Exception):
    """What the tests' SIGALRM handler raises."""


def _runaway_with_alarm(handler, budget: int, after: float):
    """Run RUNAWAY (at most ``budget`` backward jumps) with SIGALRM's handler ``handler`` and the timer set to
    ``after`` seconds: (the exception the launch raised, seconds it took, the backend, still open)."""
    backend, program = WasmBackend(), Program.from_text(RUNAWAY)
    try:   # compiled first, so that the signal comes during the wasmtime call
        backend.execute_program_with_params(program, ExecutionParams(LaunchConfig(), budget=1000))
    except AtlasTrap:
        pass
    previous = signal.signal(signal.SIGALRM, handler)
    start = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, after)
        try:
            backend.execute_program_with_params(program, ExecutionParams(LaunchConfig(), budget=budget))
        except BaseException as exc:  # noqa: BLE001 -- the test looks at what it was
            return exc, time.monotonic() - start, backend
        return None, time.monotonic() - start, backend
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_what_another_signal_handler_raises_stops_the_launch_and_is_raised():
    """A SIGALRM handler raising (a time limit) inside the call: it ran in the deadline callback, and ctypes
    reported the exception as ignored and returned an undefined value; the launch went on to its budget. Now
    the launch stops at the next tick and the handler's exception is raised; the backend runs the next launch."""
    def expired(_signum, _frame):
        raise _Alarm("time limit")

    caught, took, backend = _runaway_with_alarm(expired, 1 << 32, 0.3)   # the budget: seconds of jumps
    try:
        assert isinstance(caught, _Alarm), f"the launch raised {caught!r} after {took:.1f} s"
        assert took < PATIENCE
        out = backend.allocate_typed(1, Type.U32)
        backend.execute_program(Program.from_text(f"mov_imm.u64 r1, {int(out) << 32}\nmov_imm.u32 r2, 7\n"
                                                  "stg.u32 [r1 + 0], r2"), LaunchConfig())
        assert list(backend.copy_typed_from(out, Type.U32)) == [7]
    finally:
        backend.close()


def test_a_signal_handler_that_returns_lets_the_launch_go_on():
    """A handler that only records the signal (SIGALRM here) runs during the call and the launch ends as it
    would have: at its budget."""
    seen = []
    caught, _, backend = _runaway_with_alarm(lambda signum, _frame: seen.append(signum), 1 << 27, 0.05)
    backend.close()
    assert seen == [signal.SIGALRM]
    assert isinstance(caught, AtlasTrap) and caught.code is TrapCode.BUDGET_EXCEEDED, repr(caught)
