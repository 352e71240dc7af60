"""The browser demo's Python: the page logic that runs inside Pyodide.

Everything but ``webdemo.page`` imports only the standard library and
atlas_web / examples, so it runs (and is tested) natively too:

- ``checks``: text assembly -> parse -> verify -> round trips through the
  text, bytecode and JSON forms, with digests;
- ``choices``: the backend picker (auto / wasm / webgpu), each with whether it
  can start in this build and why not;
- ``runs``: one example on one backend through ``execute_async`` on a backend
  kept warm between runs: result, first mismatch, first and warm launch
  times, generated code, outputs;
- ``declared``: a program's own inputs, outputs and launch, declared in
  comment lines;
- ``chart``: the timings of one example across backends and sizes as inline SVG;
- ``session``: the page's state and actions, free of the DOM;
- ``controller``: the session as messages: the requests the page sends to its
  Web Worker and the events (progress, rows) the worker posts back;
- ``preload``: the modules the first result imports, imported before the
  build takes the memory snapshot the page boots from (sitebuild.snapshot).

``webdemo.page`` runs in the page's Web Worker (www/worker.js) and binds a
controller to it through Pyodide's ``js``; it imports it only under
Emscripten (``sys.platform == "emscripten"``) and refuses to start elsewhere.
The page's thread (www/boot.js) only draws: no Python runs there.
"""

from __future__ import annotations

__all__ = ["checks", "choices", "runs", "declared", "chart", "session", "controller", "preload"]
