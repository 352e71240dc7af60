"""build.py: argument handling, the requirements table and the install fingerprint (nothing is installed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _load_build_script():
    """build.py by path (a package named ``build`` may be installed too)."""
    path = Path(__file__).resolve().parent.parent / "build.py"
    spec = importlib.util.spec_from_file_location("atlas_build_script", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


build = _load_build_script()


def test_help_lists_every_command():
    result = subprocess.run([sys.executable, str(build.ROOT / "build.py"), "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    for name in build.COMMANDS:
        assert name in result.stdout
    assert set(build.COMMANDS) >= {"test", "demo"}


def test_unknown_command_is_refused():
    result = subprocess.run([sys.executable, str(build.ROOT / "build.py"), "deploy"], capture_output=True, text=True)
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_arguments_after_the_command_pass_through():
    args = build.build_parser().parse_args(["test", "-x", "-k", "registry", "--help"])
    assert args.command == "test" and args.args == ["-x", "-k", "registry", "--help"]


def test_packages_come_from_pyproject_discovery():
    packages = build.project_packages()
    assert "atlas_web" in packages
    assert set(packages) <= {"atlas_web", "wasm_backend", "webgpu_backend"}


def test_fingerprint_changes_with_the_package_set(monkeypatch):
    before = build.install_fingerprint()
    assert before == build.install_fingerprint()
    monkeypatch.setattr(build, "project_packages", lambda: ["atlas_web", "new_package"])
    assert build.install_fingerprint() != before


def test_requirements_table_and_apt_commands():
    packages = [r.package for r in build.SYSTEM_REQUIREMENTS]
    assert "mesa-vulkan-drivers" in packages
    assert all(r.reason for r in build.SYSTEM_REQUIREMENTS)
    assert build.apt_commands(["a", "b"]) == [["apt-get", "update"], ["apt-get", "install", "-y", "a", "b"]]


@pytest.fixture
def fake_dpkg(tmp_path, monkeypatch):
    """A dpkg-query on PATH that knows two packages: "present-pkg" (installed) and "removed-pkg" (config files)."""
    script = tmp_path / "dpkg-query"
    script.write_text(
        "#!/bin/sh\n"
        'case "$3" in\n'
        '  present-pkg) printf "install ok installed" ;;\n'
        '  removed-pkg) printf "deinstall ok config-files" ;;\n'
        '  *) echo "dpkg-query: no packages found matching $3" >&2; exit 1 ;;\n'
        "esac\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_dpkg_check_tells_installed_from_removed_and_unknown(fake_dpkg):
    assert build.debian_package_installed("present-pkg")
    assert not build.debian_package_installed("removed-pkg")
    assert not build.debian_package_installed("unknown-pkg")


def test_missing_requirements_uses_each_presence_check(fake_dpkg):
    by_dpkg = build.SystemRequirement("present-pkg", "test")
    gone = build.SystemRequirement("unknown-pkg", "test")
    custom = build.SystemRequirement("unknown-pkg", "test", lambda package: True)
    assert build.missing_requirements([by_dpkg, gone, custom]) == [gone]


def test_no_requirements_are_missing_without_dpkg(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dpkg-query: not a Debian system
    assert build.missing_requirements([build.SystemRequirement("anything", "test")]) == []
