"""The page's Python in its Web Worker: binds a webdemo.controller.Controller to www/worker.js through Pyodide.

Runs in the dedicated worker that www/worker.js starts (Pyodide's ``js`` is
the worker's global scope there: ``js.postMessage`` reaches the page);
importing it anywhere but under Emscripten raises ImportError saying so.
worker.js awaits ``start()`` once the wheels are installed (it returns when
the first result is posted, the backend probe following in a task) and
forwards each request of the page to ``handle(action, args_json)``. ``preload()``
(webdemo.preload) is what sitebuild.snapshot calls before taking the memory
snapshot the page boots from.
"""

from __future__ import annotations

import asyncio
import json
import sys

if sys.platform != "emscripten":
    raise ImportError("webdemo.page drives the page through Pyodide's js module: it runs only in the browser "
                      f"(sys.platform == 'emscripten'), not on {sys.platform!r}")

import js  # noqa: E402 - Pyodide only, after the platform check

from .controller import Controller  # noqa: E402
from .preload import preload  # noqa: E402

__all__ = ["start", "handle", "preload"]

#: the page's controller (and its session, ``_STATE["session"]``), kept for the worker's lifetime
_STATE: dict[str, object] = {}


def _post(event: dict) -> None:
    js.postMessage(json.dumps(event))  # a string crosses to the page as it is: no proxies to release


async def _probe(controller: Controller) -> None:
    await asyncio.sleep(0)  # the first result goes out first: importing the backends takes seconds
    controller.probe()


async def start() -> None:
    """Post the first result (examples, round trips) and start probing the backends."""
    controller = Controller(_post)
    _STATE.update(controller=controller, session=controller.session)
    controller.first_result()
    _STATE["probe"] = asyncio.ensure_future(_probe(controller))


async def handle(action: str, args_json: str) -> str:
    """The JSON answer to the page's request ``action`` (see webdemo.controller.ACTIONS)."""
    controller = _STATE["controller"]
    return json.dumps(await controller.handle(action, json.loads(args_json)))  # type: ignore[attr-defined]
