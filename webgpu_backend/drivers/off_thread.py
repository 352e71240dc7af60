"""Blocking engine calls run on one worker thread, so that their caller waits where Python can leave.

wgpu-native on Mesa's lavapipe runs a submission on its own thread, but the next submission (and so a
read back, which submits a copy) blocks inside the C call until the previous one has finished: there
no signal handler runs (Ctrl-C waits) and no event loop turns (``execute_async`` would freeze it).
The driver hands the calls that may block to an ``OffThread``:

- ``call(work)`` runs ``work()`` on the worker and waits for its result in Python (a KeyboardInterrupt
  arrives at once); ``call_async(work)`` awaits it (the event loop keeps turning).
- A caller that leaves early (interrupted, or its task cancelled) leaves the call running on the worker;
  the next ``call``/``call_async``/``settle`` waits for it first, and its outcome is dropped.

One call at a time: the driver is used by one thread at a time (the backends take turns), so the
worker and its caller never use the driver together.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Callable

__all__ = ["OffThread"]


class OffThread:
    """One worker thread (started on first use) for the blocking calls of one driver."""

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: concurrent.futures.Future | None = None

    @property
    def running(self) -> bool:
        """Whether a call is running on the worker now (its caller waiting for it, or gone)."""
        pending = self._pending
        return pending is not None and not pending.done()

    def settle(self) -> None:
        """Wait (interruptibly) until the call a caller left is done; its result or error is dropped."""
        pending = self._pending
        if pending is not None:
            concurrent.futures.wait([pending])
            self._pending = None

    async def settle_async(self) -> None:
        """As ``settle``, awaiting."""
        pending = self._pending
        if pending is not None:
            await asyncio.wait([asyncio.wrap_future(pending)])
            self._pending = None

    def call(self, work: Callable[[], Any]) -> Any:
        """``work()`` run on the worker; returns its result or raises its error. A KeyboardInterrupt while
        waiting leaves it running (see the module docstring)."""
        self.settle()
        future = self._pending = self._executor.submit(work)
        try:
            return future.result()
        finally:
            if future.done():
                self._pending = None

    async def call_async(self, work: Callable[[], Any]) -> Any:
        """As ``call``, awaiting the result; a cancelled await leaves the call running."""
        await self.settle_async()
        future = self._pending = self._executor.submit(work)
        try:
            return await asyncio.wrap_future(future)
        finally:
            if future.done():
                self._pending = None

    def close(self) -> None:
        """Wait for a call left running, then stop the worker."""
        self.settle()
        self._executor.shutdown(wait=True)
