"""A long webgpu launch awaited with ``execute_async`` leaves the event loop running, can be cancelled while
the GPU works (without a warning from wgpu's callbacks afterwards), and a synchronous one gives way to
Ctrl-C at once (issue 17 items 5 and 7). Before: the engine blocked inside its submit for the whole
launch, so a ticker did not advance, cancel() arrived after the launch and Ctrl-C waited for its end.

No timing is asserted (house rule): "while the GPU works" is what the driver says
(``waiting_off_thread``: an engine call waiting for the GPU runs on its worker thread), so the ticker counts
the turns it took while that was so, and the interrupt is sent once it is so."""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
import threading

import pytest

from atlas_web import LaunchConfig, Program
from atlas_web.isa import Type

from .harness import fresh_backend

#: every lane counts down 50,000 times (under llvmpipe's per-dispatch loop limit), then stores its count:
#: about a second of lavapipe's time over 512 lanes on a loaded machine
LONG = """
    mov_imm.u32 r1, 50000
    mov_imm.u32 r2, 0
    mov_imm.u32 r3, 1
top:
    add.u32 r2, r2, r3
    loop r1, @top
    mov_imm.u64 r4, {out}
    stg.u32 [r4 + 0], r2
"""
LANES = LaunchConfig.linear(512)
TICK = 0.005
#: the most seconds the interrupting thread waits for the launch to wait off the thread (a bound, not a timing)
PATIENCE = 30.0


def _long(backend):
    out = backend.allocate_typed(1, Type.U32)
    return out, Program.from_text(LONG.format(out=int(out) << 32))


def _ticking(driver, coroutine_factory):
    """Run ``coroutine_factory()`` under a TICK ticker: (its result, the ticks taken while ``driver`` waited
    for the GPU off its thread)."""
    async def main():
        ticks = [0]

        async def ticker():
            while True:
                await asyncio.sleep(TICK)
                if driver.waiting_off_thread:
                    ticks[0] += 1

        task = asyncio.create_task(ticker())
        try:
            result = await coroutine_factory()
        finally:
            task.cancel()
        return result, ticks[0]
    return asyncio.run(main())


def test_execute_async_leaves_the_event_loop_running(gpu_driver):
    backend = fresh_backend(gpu_driver)
    try:
        out, program = _long(backend)
        backend.execute_program(program, LANES)           # compiled: what follows is the launch alone
        _, ticks = _ticking(gpu_driver, lambda: backend.execute_async(program, LANES))
        # the loop turned while the GPU ran the launch (a blocking wait turns it only before or after)
        assert ticks >= 1, "the event loop did not turn while the launch ran on the GPU"
        assert list(backend.copy_typed_from(out, Type.U32)) == [50000]   # finished when the await returned
    finally:
        backend.close()


def test_a_cancelled_execute_async_stops_waiting_and_leaves_no_callback_warning(gpu_driver):
    backend = fresh_backend(gpu_driver)
    unraisable = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        out, program = _long(backend)
        keep = backend.allocate_buffer(16)
        backend.copy_to_buffer(keep, bytes(range(16)))
        backend.execute_program(program, LANES)

        async def cancel_while_running():
            task = asyncio.ensure_future(backend.execute_async(program, LANES))
            for _ in range(3):
                await asyncio.sleep(0)       # the launch is submitted and its read-back awaited
            assert not task.done()
            task.cancel()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert task.cancelled(), "cancel() did not end the await while the GPU worked"

        for _ in range(2):
            asyncio.run(cancel_while_running())   # each loop closed with the launch still on the GPU
        backend.execute_program(program, LANES)   # usable: waits for the cancelled launches first
        assert list(backend.copy_typed_from(out, Type.U32)) == [50000]
        assert bytes(backend.copy_from_buffer(keep)) == bytes(range(16))
        gc.collect()
        assert not unraisable, [str(u.exc_value) for u in unraisable]
    finally:
        sys.unraisablehook = previous_hook
        backend.close()


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_keyboard_interrupt_reaches_a_synchronous_launch_before_it_ends(gpu_driver):
    backend = fresh_backend(gpu_driver)
    try:
        out, program = _long(backend)
        backend.execute_program(program, LANES)
        backend.copy_typed_from(out, Type.U32)
        stop, sent = threading.Event(), []

        def interrupt_once_waiting() -> None:
            # bounded: a launch that never waits off the thread gets no signal, and the test says so
            for _ in range(int(PATIENCE / (TICK / 5))):
                if gpu_driver.waiting_off_thread:
                    sent.append(True)
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                    return
                if stop.wait(TICK / 5):
                    return

        watcher = threading.Thread(target=interrupt_once_waiting, daemon=True)
        caught, still_running = None, None
        watcher.start()
        try:
            backend.execute_program(program, LANES)
            backend.copy_typed_from(out, Type.U32)
        except KeyboardInterrupt as exc:
            caught, still_running = exc, gpu_driver.waiting_off_thread
        finally:
            stop.set()
            watcher.join(PATIENCE)
        assert sent, "the launch never waited for the GPU off the thread"
        assert isinstance(caught, KeyboardInterrupt), "the launch ended without the interrupt"
        # the interrupt came while the GPU still ran the launch (a blocking wait raises it only after)
        assert still_running, "the interrupt was raised once the launch had ended"
        backend.execute_program(program, LANES)          # usable: waits for the interrupted launch first
        assert list(backend.copy_typed_from(out, Type.U32)) == [50000]
    finally:
        backend.close()
