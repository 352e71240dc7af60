"""Nothing goes missing silently: every rule module of a code generator is imported when its package is, and
registers what it defines. A ``rules_*.py`` (or any module with a registration decorator at its top level) that
the package never imports, or that registers nothing in the rule tables, would leave its instructions
unsupported without any other test noticing (the support queries answer from the tables). Each package is
imported in a fresh interpreter, so the modules it imports are its own, not what other tests imported."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: package -> (its directory, the file patterns of its rule modules, the registration functions, the tables
#: "module:NAME" whose callables say which module registered them)
PACKAGES = {
    "wasm_backend.lowering": (
        "wasm_backend/lowering", ("rules_*.py", "coop_*.py"),
        ("lane_rule", "cooperative_rule", "branch_test", "runtime_helper", "structural"),
        ("wasm_backend.lowering.rules:WASM_LANE_RULES", "wasm_backend.lowering.rules:BRANCH_TESTS",
         "wasm_backend.lowering.rules:COOPERATIVE_RULES", "wasm_backend.lowering.module_context:HELPERS",
         "wasm_backend.lowering.math_seam:MATH_FUNCTIONS")),
    "webgpu_backend.wgsl": (
        "webgpu_backend/wgsl", ("rules_*.py", "lib_*.py", "kernels/*.py"),
        ("lane_rule", "value_rule", "compare_rule", "wide_rule", "conversion", "helper", "helper_family", "register"),
        ("webgpu_backend.wgsl.rules:WGSL_LANE_RULES", "webgpu_backend.wgsl.rules:VALUE_RULES",
         "webgpu_backend.wgsl.rules:COMPARE_RULES", "webgpu_backend.wgsl.rules_wide:WIDE_RULES",
         "webgpu_backend.wgsl.rules_convert:CONVERSIONS", "webgpu_backend.wgsl.library:HELPERS",
         "webgpu_backend.wgsl.library:FAMILY_HELPERS", "webgpu_backend.wgsl.kernels:KERNELS")),
}

# Run in a fresh interpreter: import the package, note the modules it imported, then read the tables and
# name the modules whose functions are in them.
_PROBE = r"""
import dataclasses, importlib, inspect, json, sys
package, tables = sys.argv[1], sys.argv[2:]
importlib.import_module(package)
imported = sorted(sys.modules)
registered = set()
def walk(value, depth=0):
    if depth > 4:
        return
    if inspect.isfunction(value) or inspect.ismethod(value):
        registered.add(value.__module__)
    elif isinstance(value, dict):
        for item in value.values():
            walk(item, depth + 1)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            walk(item, depth + 1)
    elif not isinstance(value, (str, int, float, type)) and value is not None:
        registered.add(type(value).__module__)  # a registered object (a WebGPU kernel) belongs to its class's module
        if dataclasses.is_dataclass(value):
            for field in dataclasses.fields(value):
                walk(getattr(value, field.name), depth + 1)
for table in tables:
    module, name = table.split(":")
    walk(getattr(importlib.import_module(module), name))
print(json.dumps({"imported": imported, "registered": sorted(registered)}))
"""


def rule_module_problems(package: str, files: dict[str, str], registrations: tuple[str, ...],
                         imported: set[str], registered: set[str]) -> list[str]:
    """What is wrong with ``package``'s rule modules (``files``: module name -> source): a module never imported,
    and a ``rules_*`` module or one with a top-level registration that registered nothing."""
    decorator = re.compile(rf"^@?({'|'.join(registrations)})\(", re.MULTILINE)
    problems = []
    for module, source in sorted(files.items()):
        if module not in imported:
            problems.append(f"{module} is never imported by {package}")
        elif (module.rsplit(".", 1)[1].startswith("rules_") or decorator.search(source)) and module not in registered:
            problems.append(f"{module} registers nothing in the rule tables")
    return problems


def _files(package: str, directory: str, patterns: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pattern in patterns:
        for path in sorted((ROOT / directory).glob(pattern)):
            if path.name != "__init__.py":
                relative = path.relative_to(ROOT / directory).with_suffix("")
                out[".".join((package, *relative.parts))] = path.read_text()
    return out


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_rule_module_is_imported_and_registers(package):
    directory, patterns, registrations, tables = PACKAGES[package]
    files = _files(package, directory, patterns)
    assert files, f"no rule modules found under {directory}"
    found = subprocess.run([sys.executable, "-c", _PROBE, package, *tables], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    result = json.loads(found.stdout)
    problems = rule_module_problems(package, files, registrations, set(result["imported"]), set(result["registered"]))
    assert not problems, "\n".join(problems)


def test_a_module_never_imported_or_registering_nothing_is_reported():
    files = {"pkg.rules_a": "@lane_rule('ADD')\ndef f(ctx, instr): ...\n", "pkg.rules_b": "X = 1\n",
             "pkg.coop_c": "@cooperative_rule('C')\ndef build(cc): ...\n", "pkg.coop_helpers": "def h(): ...\n"}
    imported = {"pkg.rules_a", "pkg.rules_b", "pkg.coop_helpers"}
    assert rule_module_problems("pkg", files, ("lane_rule", "cooperative_rule"), imported, {"pkg.rules_a"}) == [
        "pkg.coop_c is never imported by pkg", "pkg.rules_b registers nothing in the rule tables"]
