"""The Python blocks of docs/kernels.md, docs/translate.md and docs/distributed.md run (as the README's do,
tests/test_examples.py): each file's blocks in order in one namespace (a later block goes on from an earlier
one, as a reader would), and what they print is what their comments say. A block right after a line
``<!-- not executed by tests/test_doc_blocks.py: <reason> -->`` is only compiled; the reason is required."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_BLOCK = re.compile(r"(?:<!-- not executed by tests/test_doc_blocks\.py: (?P<reason>[^\n]*?) -->\n)?"
                    r"```python\n(?P<code>.*?)```", re.S)

#: what each file's blocks print, in order (the values their comments give)
PRINTED = {
    "kernels.md": ["[-2.0, -2.0]", "27.98 GB", "no backend for preference 'auto' can hold the request"],
    "translate.md": ["[0.0, 0.0, 0.5, 3.5]"],
    "distributed.md": ["(382.5, 383.0, 383.5)", "(25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0)", "(1000.0, 250.0)",
                       "281250", "Array 2.813e+05 2.5", "float32"],
}


def doc_blocks(name: str) -> list[tuple[str, str | None]]:
    """``(code, reason not executed or None)`` of each Python block of docs/``name``."""
    return [(m["code"], m["reason"]) for m in _BLOCK.finditer((DOCS / name).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_doc_python_blocks_run(name, capsys):
    blocks = doc_blocks(name)
    assert blocks, f"docs/{name} has no Python block"
    namespace = {"__name__": "doc"}
    for code, reason in blocks:
        compiled = compile(code, f"docs/{name}", "exec")
        if reason is None:
            exec(compiled, namespace)
        else:
            assert len(reason) > 20, f"docs/{name}: a block not executed needs its reason"
    out = capsys.readouterr().out
    position = 0
    for text in PRINTED[name]:
        found = out.find(text, position)
        assert found >= 0, f"docs/{name}: {text!r} not printed (in order); printed:\n{out}"
        position = found + len(text)


def test_only_the_dask_cluster_block_is_not_executed():
    skipped = {name: [reason for _, reason in doc_blocks(name) if reason] for name in PRINTED}
    assert skipped["distributed.md"] and len(skipped["distributed.md"]) == 1 and "LocalCluster" in \
        skipped["distributed.md"][0]
    assert not skipped["kernels.md"] and not skipped["translate.md"]
