"""The epoch ticker never touches a freed engine: wasmtime-py frees an engine in a ctypes call that lets other
threads run and clears its pointer only after, so deleting a TickedEngine waits for a tick in progress and
marks it deleted first, and a tick skips a deleted engine (a whole-suite run once segfaulted in
wasmtime_engine_increment_epoch on the ticker's thread)."""

from __future__ import annotations

import threading

import wasmtime

from wasm_backend.runners.interrupts import EpochTicker


def _config() -> wasmtime.Config:
    config = wasmtime.Config()
    config.epoch_interruption = True
    return config


def test_a_tick_skips_an_engine_closed_while_still_referenced():
    engine = EpochTicker.new_engine(_config())
    keep = EpochTicker.new_engine(_config())   # a live one: the tick goes on
    engine.close()                              # freed, but still in the ticker's weak set (we hold it)
    assert engine.deleted
    assert EpochTicker.tick() is True           # before: ValueError 'already closed' ended the ticker's thread
    keep.increment_epoch()


def test_deleting_an_engine_waits_for_a_tick_in_progress():
    engine = EpochTicker.new_engine(_config())
    closed = threading.Event()

    def close() -> None:
        engine.close()
        closed.set()

    with EpochTicker.lock:                      # a tick in progress
        closer = threading.Thread(target=close)
        closer.start()
        assert not closed.wait(0.3)             # the deletion waits for the tick
        assert not engine.deleted
        engine.increment_epoch()                # the engine is still whole inside the tick
    assert closed.wait(10)
    closer.join(10)
    assert engine.deleted
