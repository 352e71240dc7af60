"""The browser demo's Python: the page logic that runs inside Pyodide.

Everything but ``webdemo.page`` imports only the standard library and
atlas_web / examples, so it runs (and is tested) natively too:

- ``checks``: text assembly -> parse -> verify -> round trips through the
  text, bytecode and JSON forms, with digests;
- ``choices``: the backend picker (auto / wasm / webgpu), each with whether it
  can start in this build and why not;
- ``runs``: one example on one backend through ``execute_async``: result,
  first mismatch, timing, generated code;
- ``chart``: the timings across backends and sizes as inline SVG;
- ``session``: the page's state and actions, free of the DOM.

``webdemo.page`` binds the session to the DOM through Pyodide's ``js`` and
``pyodide.ffi``; it imports them only under Emscripten (``sys.platform ==
"emscripten"``) and refuses to start elsewhere.
"""

from __future__ import annotations

__all__ = ["checks", "choices", "runs", "chart", "session"]
