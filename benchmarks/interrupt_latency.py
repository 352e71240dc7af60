"""Ctrl-C latency of a long launch (issue 17 item 7): seconds from a real SIGINT to the KeyboardInterrupt
reaching the caller, per backend, and whether the backend runs the next launch afterwards.

wasm: a runaway loop in one lane (one-lane-at-a-time code; the budget is 2**40 jumps, so only the interrupt
ends it), stopped through wasmtime's epoch interruption. webgpu: every one of 512 lanes counts 50,000 times
(about a second of lavapipe's time per launch on a loaded machine), the signal comes a tenth of a launch
in; the synchronous launch waits on a worker thread, so the interrupt reaches the caller at once while
the GPU finishes the dispatch; the next launch waits for it (its wait is printed as ``next``). cpu (the
reference) for comparison. Each backend is interrupted ``--repeats`` times; min / median / max printed.
Not a test (the tests check that the interrupt arrives before the launch would end, without timings).

Measured on the loaded 2-core development machine (load 8-12), 5 interrupts each: wasm 36 / 53 / 80 ms
(min / median / max; the next launch runs at once), webgpu (lavapipe, 2.6 s launches) 0.4 / 3.5 / 16 ms, the
next launch waiting about 5 s (the interrupted dispatch runs to its end on the device, then its own),
cpu 0.2 / 0.3 / 0.4 ms. Before issue 17 item 7: wasm 7-30 s, webgpu 3-12 s (the end of the launch).

    PYTHONPATH=. python benchmarks/interrupt_latency.py [--backend wasm|webgpu|cpu ...] [--repeats 5]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import threading
import time

from atlas_web import ExecutionParams, LaunchConfig, Program
from atlas_web.isa import Type
from atlas_web.registry import get_backend
from tests.wasm_backend import test_interrupt_launch
from tests.webgpu_backend import test_async_launch

#: the programs of the Ctrl-C tests: wasm's runaway loop (with a budget no launch reaches), webgpu's counting lanes
RUNAWAY, BUDGET, COUNT = test_interrupt_launch.RUNAWAY, test_interrupt_launch.BUDGET, test_async_launch.LONG


def interrupted(launch, delay: float) -> float | None:
    """Run ``launch()``, sending this thread SIGINT after ``delay`` s: seconds from the signal to the
    KeyboardInterrupt (None: the launch ended first)."""
    sent: list[float] = []

    def interrupt() -> None:
        sent.append(time.perf_counter())
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Timer(delay, interrupt)
    timer.start()
    try:
        launch()
    except KeyboardInterrupt:
        return time.perf_counter() - sent[0]
    finally:
        timer.cancel()
    return None


def measure(name: str, repeats: int) -> None:
    latencies, nexts = [], []
    with get_backend(name) as backend:
        out = backend.allocate_typed(1, Type.U32)
        if name == "webgpu":
            program, config = Program.from_text(COUNT.format(out=int(out) << 32)), LaunchConfig.linear(512)
            expected = 50000
            params = ExecutionParams(config)
            backend.execute_program_with_params(program, params)
            backend.copy_typed_from(out, Type.U32)
            start = time.perf_counter()
            backend.execute_program_with_params(program, params)
            backend.copy_typed_from(out, Type.U32)
            delay = (time.perf_counter() - start) / 10
            print(f"{name}: one launch {delay * 10:.2f} s; signal {delay:.3f} s in", flush=True)
        else:
            program, params, delay = Program.from_text(RUNAWAY), ExecutionParams(LaunchConfig(), budget=BUDGET), 0.5
            expected = None

        def launch() -> None:
            backend.execute_program_with_params(program, params)
            backend.copy_typed_from(out, Type.U32)

        for _ in range(repeats):
            latency = interrupted(launch, delay)
            if latency is None:
                print(f"{name}: the launch ended before the signal", flush=True)
                continue
            latencies.append(latency)
            check = Program.from_text(COUNT.format(out=int(out) << 32)) if expected else \
                Program.from_text(f"mov_imm.u64 r1, {int(out) << 32}\nmov_imm.u32 r2, 7\nstg.u32 [r1 + 0], r2")
            start = time.perf_counter()
            backend.execute_program_with_params(check, ExecutionParams(LaunchConfig.linear(512) if expected
                                                                       else LaunchConfig()))
            got = int(backend.copy_typed_from(out, Type.U32)[0])
            nexts.append(time.perf_counter() - start)
            assert got == (expected or 7), f"{name}: the launch after the interrupt wrote {got}"
    if latencies:
        ms = sorted(x * 1e3 for x in latencies)
        print(f"{name:7s} SIGINT -> KeyboardInterrupt: min {ms[0]:8.2f} ms  median {statistics.median(ms):8.2f} ms  "
              f"max {ms[-1]:8.2f} ms over {len(ms)}; next launch (usable) median "
              f"{statistics.median(nexts) * 1e3:.0f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", choices=("cpu", "wasm", "webgpu"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    # Python's handler even where this process inherited SIGINT ignored (started in the background)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in args.backend or ["wasm", "webgpu", "cpu"]:
        measure(name, args.repeats)


if __name__ == "__main__":
    main()
