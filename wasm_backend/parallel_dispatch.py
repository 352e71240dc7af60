"""ParallelDispatch: an imported function that runs a batch of an export's calls on the runner's threads.

A module compiled for several threads hands a parallel map, a reduction's chunks or a launch's lanes to
the host through an import (``env.parallel_map``, ``env.parallel_reduce``, ``env.parallel_lanes``). What the
host does for one of them depends on the import's arguments only: it cuts the work (``thread_policy``) into
the argument tuples of calls of one export and runs them with ``runner.parallel_caller``. So the backend
gives ``instantiate`` a ``ParallelDispatch`` in place of a Python function: ``plan(*arguments) ->
(export_name, argument_lists)``, a pure function of the import's arguments (as the module passes them:
ints, possibly negative for addresses of 2 GiB and more). The runner makes the imported function and keeps
the plans of up to ``PLANS_KEPT`` distinct argument tuples (then forgets them all and starts again), so a
launch that repeats one computes it once:
natively (``dispatch_function``) a dict lookup; in the browser the function is JS, and a repeated dispatch
runs its batch without entering Python (``runners/js_runner.py``).

Each call of the import adds 1 to ``count.value``: a ``DispatchCount`` (or, in the browser, a JS object with
a ``value``) the runner made with ``dispatch_count()``, one per backend, shared by its imports.

Raises what ``plan`` and the batch raise (WasmTrap, KeyboardInterrupt, WasmInterfaceError), through the
module's call. Copies nothing.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["ParallelDispatch", "DispatchCount", "PLANS_KEPT", "dispatch_function"]

#: the most distinct argument tuples whose plans an import keeps (then it forgets them all)
PLANS_KEPT = 64


class DispatchCount:
    """How many dispatches a backend's imports ran (``value``)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


@dataclass(frozen=True)
class ParallelDispatch:
    """An import for ``WasmRunner.instantiate`` (see the module docstring): ``plan(*arguments) -> (export_name,
    argument_lists)``; ``count`` from the runner's ``dispatch_count()``. ``plan`` must not refer to the
    instance, the runner or the backend (a wasmtime host function lives as long as its Store)."""

    plan: Callable[..., tuple[str, list[tuple]]]
    count: Any


def dispatch_function(runner: Any, dispatch: ParallelDispatch, instance_ref: list) -> Callable[..., None]:
    """The Python import that runs ``dispatch`` on ``runner``'s threads; ``instance_ref[0]()`` is the instance
    once it exists. Refers to the runner and the instance weakly."""
    runner_ref = weakref.ref(runner)
    plans: dict[tuple, tuple[str, list[tuple]]] = {}
    plan, count = dispatch.plan, dispatch.count

    def dispatched(*arguments: int) -> None:
        found = plans.get(arguments)
        if found is None:
            if len(plans) >= PLANS_KEPT:
                plans.clear()
            found = plans[arguments] = plan(*arguments)
        count.value += 1
        runner_ref().parallel_caller(instance_ref[0](), found[0])(found[1])

    return dispatched
