"""The modules the page's first result needs, imported ahead of it for the build's memory snapshot.

www/worker.js boots the page's Python from a memory snapshot of Pyodide that
sitebuild.snapshot makes at build time: the wheels installed, ``webdemo.page``
imported and ``preload()`` called, nothing started. Every module imported then
is already in ``sys.modules`` when the page loads, so the first result
(Controller.first_result: the examples, their checks and round trips, the
charts) imports nothing. FIRST_RESULT_MODULES lists what first_result imports
beyond webdemo.page's own imports (tests/test_webdemo_preload.py checks it
natively). Importing only: nothing is computed, opened or started here.
"""

from __future__ import annotations

import importlib

__all__ = ["FIRST_RESULT_MODULES", "preload"]

#: what Controller.first_result imports on its way (parsing, verifying, the three forms, the examples)
FIRST_RESULT_MODULES: tuple[str, ...] = (
    "atlas_web.asm", "atlas_web.asm_format", "atlas_web.asm_parse", "atlas_web.atlas", "atlas_web.bytecode",
    "atlas_web.jsonform", "atlas_web.leb128", "atlas_web.lowering", "atlas_web.lowering.cfg",
    "atlas_web.lowering.liveness", "atlas_web.lowering.plan", "atlas_web.lowering.stages",
    "atlas_web.lowering.structure", "atlas_web.verify", "atlas_web.verify_dataflow", "atlas_web.verify_memory",
    "atlas_web.verify_operands", "atlas_web.verify_types", "atlas_web.verify_uniformity",
    "examples.atlas_bytes", "examples.collatz", "examples.relu_chain", "examples.softmax", "examples.vector_add",
    "webdemo.controller",
)


def preload() -> None:
    """Import FIRST_RESULT_MODULES; raises ImportError (ModuleNotFoundError) naming a module that is missing."""
    for name in FIRST_RESULT_MODULES:
        importlib.import_module(name)
