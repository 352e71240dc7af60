"""Ctrl-C inside one long wasmtime call (a real SIGINT): the one-lane-at-a-time code of a runaway loop stops
with KeyboardInterrupt before its budget, and the backend runs the next launch (issue 17 item 7). Before
epoch interruption the interrupt waited for the end of the call.

No timing is asserted (house rule): the loop stores its count at every turn (an interrupted call keeps what
it wrote, wasm_backend/runners/interrupts.py), so "stopped early" is a count below the budget, and the
budget bounds the wait of a launch that the signal failed to stop (tens of seconds, not the test's timeout)."""

from __future__ import annotations

import signal
import threading

from atlas_web import AtlasTrap, LaunchConfig, Program, TrapCode
from atlas_web.isa import Type
from atlas_web.launch import ExecutionParams
from wasm_backend import WasmBackend

#: the runaway loop storing its turns at [r3] (a u64 handle word, formatted in): at its budget B it has
#: stored B + 1, so a launch stopped by a signal stored fewer than B
COUNTING = """
    mov_imm.u64 r3, {out}
    mov_imm.u64 r1, 1
    mov_imm.u64 r2, 0
top:
    add.u64 r2, r2, r1
    stg.u64 [r3 + 0], r2
    bra @top
"""
#: the budget of the launches a signal must stop: tens of seconds of COUNTING's turns, many times the time
#: the signal takes to come (it only bounds the wait when a signal fails to stop the launch)
BUDGET = 1 << 32


def _counting(backend) -> tuple[int, Program]:
    """A one-word u64 output on ``backend`` (zeroed) and COUNTING storing its turns there."""
    out = backend.allocate_typed(1, Type.U64)
    backend.copy_typed_to(out, [0], Type.U64)
    return out, Program.from_text(COUNTING.format(out=int(out) << 32))


def _turns(backend, out) -> int:
    return int(backend.copy_typed_from(out, Type.U64)[0])


def _runs_the_next_launch(backend) -> None:
    """The backend is usable: a launch runs and writes its output."""
    out = backend.allocate_typed(1, Type.U32)
    backend.execute_program(Program.from_text(f"mov_imm.u64 r1, {int(out) << 32}\nmov_imm.u32 r2, 7\n"
                                              "stg.u32 [r1 + 0], r2"), LaunchConfig())
    assert list(backend.copy_typed_from(out, Type.U32)) == [7]


def test_keyboard_interrupt_stops_a_runaway_launch_and_the_backend_stays_usable():
    # Python's own SIGINT handler whatever this process inherited: started in the background by a
    # non-interactive shell, a process ignores SIGINT, and an ignored Ctrl-C must not stop the launch
    # (call_interruptibly leaves SIG_IGN alone), so the runaway loop would run to its budget
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    backend = WasmBackend(budget=BUDGET)
    try:
        out, program = _counting(backend)
        sent: list[bool] = []

        def interrupt() -> None:
            sent.append(True)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        timer = threading.Timer(0.5, interrupt)
        timer.start()
        caught = None
        try:
            backend.execute_program_with_params(program, ExecutionParams(LaunchConfig()))
        except KeyboardInterrupt as exc:
            caught = exc
        except AtlasTrap as trap:
            caught = trap
        finally:
            timer.cancel()
        assert sent and isinstance(caught, KeyboardInterrupt), f"the runaway launch ended with {caught!r}"
        assert 0 < _turns(backend, out) < BUDGET, "the launch did not stop before its budget"
        _runs_the_next_launch(backend)
    finally:
        backend.close()
        signal.signal(signal.SIGINT, inherited)


class _Alarm(Exception):
    """What the tests' SIGALRM handler raises."""


def _runaway_with_alarm(handler, budget: int, after: float):
    """Run COUNTING (at most ``budget`` backward jumps) with SIGALRM's handler ``handler`` and the timer set to
    ``after`` seconds: (the exception the launch raised, the turns it stored, the backend, still open)."""
    backend = WasmBackend()
    out, program = _counting(backend)
    try:   # compiled first, so that the signal comes during the wasmtime call
        backend.execute_program_with_params(program, ExecutionParams(LaunchConfig(), budget=1000))
    except AtlasTrap:
        pass
    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, after)
        try:
            backend.execute_program_with_params(program, ExecutionParams(LaunchConfig(), budget=budget))
        except BaseException as exc:  # noqa: BLE001 -- the test looks at what it was
            return exc, _turns(backend, out), backend
        return None, _turns(backend, out), backend
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_what_another_signal_handler_raises_stops_the_launch_and_is_raised():
    """A SIGALRM handler raising (a time limit) inside the call: it ran in the deadline callback, and ctypes
    reported the exception as ignored and returned an undefined value; the launch went on to its budget. Now
    the launch stops at the next tick and the handler's exception is raised; the backend runs the next launch."""
    def expired(_signum, _frame):
        raise _Alarm("time limit")

    caught, turns, backend = _runaway_with_alarm(expired, BUDGET, 0.3)
    try:
        assert isinstance(caught, _Alarm), f"the launch raised {caught!r} after {turns} turns"
        assert 0 < turns < BUDGET, "the launch did not stop before its budget"
        _runs_the_next_launch(backend)
    finally:
        backend.close()


def test_a_signal_handler_that_returns_lets_the_launch_go_on():
    """A handler that only records the signal (SIGALRM here) runs during the call and the launch ends as it
    would have: at its budget."""
    seen = []
    caught, turns, backend = _runaway_with_alarm(lambda signum, _frame: seen.append(signum), 1 << 25, 0.05)
    backend.close()
    assert seen == [signal.SIGALRM]
    assert isinstance(caught, AtlasTrap) and caught.code is TrapCode.BUDGET_EXCEEDED, repr(caught)
    assert turns == (1 << 25) + 1
