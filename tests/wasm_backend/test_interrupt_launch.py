"""Ctrl-C inside one long wasmtime call (a real SIGINT): the one-lane-at-a-time code of a runaway loop stops
within seconds with KeyboardInterrupt, and the backend runs the next launch (issue 17 item 7). Before epoch
interruption the interrupt waited for the end of the call."""

from __future__ import annotations

import signal
import threading
import time

from atlas_web import LaunchConfig, Program
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
