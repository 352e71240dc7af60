"""webdemo.preload natively: FIRST_RESULT_MODULES is what the page's first result imports (of our packages), so
the memory snapshot the page boots from (taken after preload()) leaves the first result nothing to import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from webdemo import preload

ROOT = Path(__file__).resolve().parents[1]
#: a fresh interpreter: what webdemo.page imports (its controller), then what first_result imports on top
_IMPORTED_BY_FIRST_RESULT = """
import json, sys
import webdemo.controller
before = set(sys.modules)
webdemo.controller.Controller(lambda event: None).first_result()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_first_result_modules_are_what_the_first_result_imports_of_our_packages():
    output = subprocess.run([sys.executable, "-c", _IMPORTED_BY_FIRST_RESULT], cwd=ROOT, capture_output=True,
                            text=True, check=True, timeout=300).stdout
    ours = {name for name in json.loads(output) if name.split(".")[0] in ("atlas_web", "examples", "webdemo")}
    assert ours <= set(preload.FIRST_RESULT_MODULES), sorted(ours - set(preload.FIRST_RESULT_MODULES))


def test_preload_imports_them_all():
    preload.preload()
    assert all(name in sys.modules for name in preload.FIRST_RESULT_MODULES)
