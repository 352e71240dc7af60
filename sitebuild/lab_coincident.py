"""The lab's kernel bridge made race-free: three rewrites of the bundled ``coincident`` 1.2.3.

In a cross-origin isolated page the Pyodide kernel (jupyterlite-pyodide-kernel 0.8.x) talks to its
worker through ``coincident``: a call posts a message with a small ``SharedArrayBuffer`` and waits on
its first 32-bit word (the worker with ``Atomics.wait``, the page with ``Atomics.waitAsync``); the
answering side writes the result's length and sets that word, then, on a second request, copies the
result's UTF-16 characters into a second buffer and notifies. Two races follow:

* the copy writes the characters in order, so the first two characters *are* the word the waiter waits
  on: a waiter that reaches ``Atomics.wait`` only after the copy has begun (the worker preempted between
  posting and waiting, on a busy machine) returns at once and parses a half-written result. In the
  drive's synchronous file-system calls (``/drive``, the kernel's working directory, asked at every
  import) that is a fatal Pyodide error, ``SyntaxError: Expected double-quoted property name in JSON``,
  and the kernel stays busy for ever;
* ``Atomics.waitAsync`` returns ``{async: false, value: "not-equal"}`` instead of a promise when the
  answer is already there, and the page's ``.value.then`` throws ``A(...).value.then is not a function``:
  the kernel's request never settles (the notebook stays at ``[*]``).

The rewrites: the copy writes characters 2.. first and then the first word with one ``Atomics.store``
(so a waiter sees the flag only with the whole result, and the store orders the copy before it); the
"length is ready" flag is set with ``Atomics.store`` after the length; and a synchronous ``waitAsync``
answer becomes a resolved promise. Upstream replaced coincident 1.2.3 by 4.x after 0.8.x (pyodide-kernel
0.9.0a1, pre-release); 0.8.7 still bundles 1.2.3.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["COINCIDENT_MARKER", "HANDOFF_REWRITES", "BRIDGE_RACE_SIGNATURES", "bridge_races", "bundled_coincident",
           "is_patched", "patch_coincident", "unpatched_bundles"]

#: the message key of coincident 1.x: a file holding it is a bundled coincident
COINCIDENT_MARKER = "64e10b34-2bf7-4616-9668-f99de5aa046e"
#: appended to a rewritten file, so that rebuilding over an existing lab leaves it as it is
_DONE = "\n/* atlas-web: coincident handoff made race-free (sitebuild/lab_coincident.py) */\n"
#: (what, pattern, replacement) over the minified bundle; identifiers are captured, not assumed
HANDOFF_REWRITES: tuple[tuple[str, str, str], ...] = (
    ("the result's copy sets the waited-on word last",
     r"for\(let (\w+)=new (\w+)\((\w+)\.buffer\),(\w+)=0;\4<(\w+)\.length;\4\+\+\)\1\[\4\]=\5\.charCodeAt\(\4\)\}",
     r"for(let \1=new \2(\3.buffer),\4=2;\4<\5.length;\4++)\1[\4]=\5.charCodeAt(\4);"
     r"Atomics.store(\3,0,new Int32Array(new Uint16Array([\5.charCodeAt(0),\5.charCodeAt(1)||0]).buffer)[0])}"),
    ("the length's flag is stored atomically after the length",
     r";(\w+)\[0\]=1\}else\{let ",
     r";Atomics.store(\1,0,1)}else{let "),
    ("an answer already there when waitAsync is called becomes a resolved promise",
     r"(\w+)=\((\w+),(\w+)\)=>\2\?(\w+)\(\3,0\):",
     r"\1=(\2,\3)=>\2?(w=>w.async===!1?{value:Promise.resolve(w.value)}:w)(\4(\3,0)):"),
)


#: what a page's console shows when the races above strike: the worker's fatal Pyodide error ("Pyodide has
#: suffered a fatal error") over a half-copied answer ("SyntaxError: ... in JSON at position N"), and the page's
#: ".value.then is not a function" of a synchronous waitAsync answer
BRIDGE_RACE_SIGNATURES = ("fatal error", "in JSON at position", "value.then is not a function")


def bridge_races(console: list[str]) -> list[str]:
    """The lines of ``console`` (a page's error messages) that show the bridge's races (BRIDGE_RACE_SIGNATURES)."""
    return [line for line in console if any(signature in line for signature in BRIDGE_RACE_SIGNATURES)]


def bundled_coincident(static_dir: Path) -> list[Path]:
    """The scripts (``*.js``) directly under ``static_dir`` that bundle coincident, sorted; reads only."""
    return sorted(p for p in Path(static_dir).glob("*.js") if COINCIDENT_MARKER in p.read_text(encoding="utf-8"))


def is_patched(text: str) -> bool:
    """Whether a bundle's text is the rewritten one: it ends with this module's mark and none of the
    race-prone handoffs that ``HANDOFF_REWRITES`` replaces is left in it. Pure: never writes anything."""
    return text.endswith(_DONE) and not any(re.search(pattern, text) for _, pattern, _ in HANDOFF_REWRITES)


def unpatched_bundles(static_dir: Path) -> list[Path]:
    """The bundled coincidents under ``static_dir`` that are not rewritten (``is_patched`` is false), sorted;
    an empty list when every one is (or none is there: count ``bundled_coincident`` for that). Read-only,
    unlike ``patch_coincident``: a check that must not repair what it checks uses this."""
    return [p for p in bundled_coincident(static_dir) if not is_patched(p.read_text(encoding="utf-8"))]


def patch_coincident(static_dir: Path) -> list[str]:
    """Rewrite every bundled coincident under ``static_dir`` (the kernel extension's ``static/`` in the
    built lab) in place; returns the names of the files rewritten now (already rewritten ones are left).

    Raises ValueError when no file holds coincident or a rewrite does not match exactly once in a file
    that does (another pyodide-kernel release: check its coincident before changing the pin).
    """
    bundles = bundled_coincident(static_dir)
    if not bundles:
        raise ValueError(f"no bundled coincident (key {COINCIDENT_MARKER}) in {static_dir}")
    rewritten = []
    for bundle in bundles:
        text = bundle.read_text(encoding="utf-8")
        if text.endswith(_DONE):
            continue
        for what, pattern, replacement in HANDOFF_REWRITES:
            text, count = re.subn(pattern, replacement, text)
            if count != 1:
                raise ValueError(f"{bundle.name}: '{what}' matched {count} times, not once")
        bundle.write_text(text + _DONE, encoding="utf-8")
        rewritten.append(bundle.name)
    return rewritten
