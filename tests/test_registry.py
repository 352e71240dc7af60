"""The backend registry, with small real Backend subclasses defined here (no mocks of atlas_web)."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest

import atlas_web
from atlas_web import API_VERSION, AllocationFailed, Backend, BackendUnavailable
from atlas_web import registry
from atlas_web.errors import ExecutionFailed
from atlas_web.memory import HandleTable
from atlas_web.registry import (
    AUTO_ORDER, BackendPreference, BackendStatus, discover_backends, get_backend, init_backend,
    init_backend_with_memory_check, load_backend_class, print_backend_summary, register_backend,
    registered_backends, unregister_backend,
)


class HostBackend(Backend):
    """A working backend whose memory is host bytearrays; it runs no instructions.

    ``max_memory`` (class attribute) caps the bytes of live buffers and is
    reported by device_info() when ``report_max_memory`` is set.
    """

    name = "host"
    max_memory: int | None = None
    report_max_memory = True
    constructed = 0
    closed = 0

    def __init__(self, **options) -> None:
        type(self).constructed += 1
        self.options = options
        self.table = HandleTable()
        self.data: dict[int, bytearray] = {}

    def _live_bytes(self) -> int:
        return sum(len(b) for b in self.data.values())

    def allocate_buffer(self, size):
        size = HandleTable.check_size(size, "buffer")
        if self.max_memory is not None and self._live_bytes() + size > self.max_memory:
            raise AllocationFailed(f"{size} bytes asked, {self.max_memory - self._live_bytes()} left")
        alloc = self.table.add("buffer", size)
        self.data[alloc.handle] = bytearray(size)
        return atlas_web.BufferHandle(alloc.handle)

    def free_buffer(self, handle):
        self.data.pop(self.table.remove(handle, "buffer").handle)

    def copy_to_buffer(self, handle, data, offset=0):
        raw = memoryview(data).cast("B")
        self.table.check_range(self.table.get(handle, "buffer"), offset, len(raw), "copy_to_buffer")
        self.data[handle][offset:offset + len(raw)] = raw

    def copy_from_buffer(self, handle, out=None, offset=0):
        alloc = self.table.get(handle, "buffer")
        length = alloc.size - offset if out is None else len(memoryview(out).cast("B"))
        self.table.check_range(alloc, offset, length, "copy_from_buffer")
        if out is None:
            return bytes(self.data[handle][offset:offset + length])
        memoryview(out).cast("B")[:] = self.data[handle][offset:offset + length]
        return out

    def buffer_size(self, handle):
        return self.table.get(handle, "buffer").size

    def allocate_pool(self, size):
        raise AllocationFailed("HostBackend has no pools")

    def free_pool(self, handle):
        self.table.get(handle, "pool")

    def copy_to_pool(self, handle, offset, data):
        self.table.get(handle, "pool")

    def copy_from_pool(self, handle, offset, out):
        self.table.get(handle, "pool")

    def pool_size(self, handle):
        return self.table.get(handle, "pool").size

    def execute_program_with_params(self, program, params):
        raise ExecutionFailed("HostBackend runs no programs")

    def supports_op(self, info, ty):
        return False

    def device_info(self):
        info = {"name": self.name, "device": f"host memory ({type(self).__name__})", "engine": "bytearray"}
        if self.report_max_memory:
            info["max_memory"] = self.max_memory
        return info

    def resonance_accumulator(self):
        return [0.0] * 96

    def close(self):
        type(self).closed += 1


class SmallBackend(HostBackend):
    max_memory = 1000


class LargeBackend(HostBackend):
    max_memory = 1 << 20


class SmallSilentBackend(HostBackend):
    """Does not report max_memory: the memory check must allocate to find out."""

    max_memory = 1000
    report_max_memory = False


class LargeSilentBackend(SmallSilentBackend):
    max_memory = 1 << 20


class BrokenBackend(HostBackend):
    def __init__(self, **options) -> None:
        raise RuntimeError("no device here")


class RefusingBackend(HostBackend):
    def __init__(self, **options) -> None:
        raise BackendUnavailable("the adapter refused")


class ProbedBackend(HostBackend):
    constructed = 0

    @classmethod
    def probe(cls):
        return ["gpu0", "gpu1"]


class ProbeRefusesBackend(HostBackend):
    @classmethod
    def probe(cls):
        raise BackendUnavailable("probe: no adapter")


class FutureBackend(HostBackend):
    api_version = API_VERSION + 1


class SoftwareGpuBackend(HostBackend):
    """Says it is a GPU API implemented on the CPU (as WebGPU on lavapipe or SwiftShader does)."""

    max_memory = 1 << 20

    def device_info(self):
        return {**super().device_info(), "device_type": "software-gpu"}


class NotABackend:
    pass


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch):
    """Each test sees the real registry's entries, and its changes are undone afterwards."""
    reg = registry._REGISTRY
    reg.ensure_plugins()
    monkeypatch.setattr(reg, "entries", dict(reg.entries))
    for cls in (HostBackend, ProbedBackend, SoftwareGpuBackend):
        monkeypatch.setattr(cls, "constructed", 0)
        monkeypatch.setattr(cls, "closed", 0)
    return reg


def test_builtins_are_registered_by_name_in_auto_order():
    assert registered_backends()[:3] == ["cpu", "wasm", "webgpu"]
    assert AUTO_ORDER == ("webgpu", "wasm", "cpu")
    assert [p.value for p in BackendPreference] == ["auto", "cpu", "wasm", "webgpu"]


def test_reference_backend_is_available_where_numpy_is():
    status = {s.name: s for s in discover_backends(refresh=True)}["cpu"]
    assert status.available, status.reason
    assert status.devices and status.reason == ""
    assert isinstance(get_backend("cpu"), load_backend_class("cpu"))


def test_importing_atlas_web_imports_no_backend_or_engine():
    code = textwrap.dedent("""
        import sys
        import atlas_web, atlas_web.registry
        assert atlas_web.registry.registered_backends()[:3] == ["cpu", "wasm", "webgpu"]
        heavy = [m for m in ("numpy", "wasmtime", "wgpu", "atlas_web.reference", "wasm_backend", "webgpu_backend")
                 if m in sys.modules]
        print(heavy)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_registered_class_is_built_with_options():
    register_backend("host", HostBackend)
    backend = get_backend("host", flavour="plain")
    assert isinstance(backend, HostBackend) and backend.options == {"flavour": "plain"}
    assert backend.allocate_buffer(4) == 2  # a fresh backend: first handle is 2
    assert "host" in registered_backends()


def test_registration_is_checked():
    register_backend("host", HostBackend)
    with pytest.raises(ValueError, match="already registered"):
        register_backend("host", LargeBackend)
    register_backend("host", LargeBackend, replace=True)
    assert load_backend_class("host") is LargeBackend
    with pytest.raises(ValueError, match="Backend subclass"):
        register_backend("bad", NotABackend)
    with pytest.raises(ValueError, match="module:Class"):
        register_backend("bad", "no_colon_here")
    with pytest.raises(ValueError, match="non-empty"):
        register_backend("", HostBackend)
    unregister_backend("host")
    assert "host" not in registered_backends()
    with pytest.raises(BackendUnavailable, match="unknown backend 'host'"):
        unregister_backend("host")


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(BackendUnavailable) as info:
        get_backend("quantum")
    message = str(info.value)
    assert "unknown backend 'quantum'" in message
    for name in ("cpu", "wasm", "webgpu"):
        assert name in message


def test_missing_package_makes_a_backend_unavailable_with_the_reason():
    register_backend("ghost", "atlas_no_such_package_xyz:GhostBackend")
    status = {s.name: s for s in discover_backends()}["ghost"]
    assert not status.available
    assert "atlas_no_such_package_xyz" in status.reason
    with pytest.raises(BackendUnavailable, match="cannot be imported"):
        get_backend("ghost")


def test_import_path_to_a_missing_attribute_or_non_backend_is_refused():
    register_backend("noattr", "tests.test_registry:NoSuchClass")
    register_backend("notbackend", "tests.test_registry:NotABackend")
    with pytest.raises(BackendUnavailable, match="no attribute 'NoSuchClass'"):
        load_backend_class("noattr")
    with pytest.raises(BackendUnavailable, match="not a Backend subclass"):
        load_backend_class("notbackend")


def test_import_path_is_loaded_lazily():
    register_backend("lazy", "tests.test_registry:ProbedBackend")
    assert load_backend_class("lazy") is ProbedBackend


def test_other_api_version_is_refused_naming_both_versions():
    register_backend("future", FutureBackend)
    with pytest.raises(BackendUnavailable) as info:
        get_backend("future")
    assert f"API version {API_VERSION + 1}" in str(info.value)
    assert f"needs API version {API_VERSION}" in str(info.value)


def test_probe_hook_answers_without_constructing():
    register_backend("probed", ProbedBackend)
    status = {s.name: s for s in discover_backends()}["probed"]
    assert status == BackendStatus("probed", True, "", ("gpu0", "gpu1"))
    assert ProbedBackend.constructed == 0
    register_backend("refuses", ProbeRefusesBackend)
    status = {s.name: s for s in discover_backends()}["refuses"]
    assert not status.available and status.reason == "probe: no adapter"


def test_probing_constructs_reads_the_device_and_closes():
    register_backend("host", HostBackend)
    register_backend("broken", BrokenBackend)
    register_backend("refusing", RefusingBackend)
    statuses = {s.name: s for s in discover_backends()}
    assert statuses["host"].available and statuses["host"].devices == ("host memory (HostBackend)",)
    assert HostBackend.constructed == 1 and HostBackend.closed == 1
    assert statuses["broken"] == BackendStatus("broken", False, "RuntimeError: no device here")
    assert statuses["refusing"].reason == "the adapter refused"


def test_discovery_is_cached_until_refreshed():
    register_backend("host", HostBackend)
    discover_backends()
    discover_backends()
    assert HostBackend.constructed == 1
    discover_backends(refresh=True)
    assert HostBackend.constructed == 2


def test_summary_prints_one_line_per_backend():
    register_backend("host", HostBackend)
    register_backend("broken", BrokenBackend)
    out = io.StringIO()
    statuses = print_backend_summary(out)
    text = out.getvalue()
    assert f"API version {API_VERSION}" in text
    assert len(text.strip().splitlines()) == 1 + len(statuses)
    assert any(line.split()[:2] == ["host", "available"] and "host memory" in line for line in text.splitlines())
    assert any(line.split()[:2] == ["broken", "unavailable"] and "no device here" in line
               for line in text.splitlines())


def _replace_builtins(webgpu, wasm, cpu):
    for name, cls in (("webgpu", webgpu), ("wasm", wasm), ("cpu", cpu)):
        register_backend(name, cls, replace=True)


def test_auto_falls_back_in_order():
    _replace_builtins(BrokenBackend, SmallBackend, LargeBackend)
    assert type(init_backend()) is SmallBackend
    _replace_builtins(LargeBackend, SmallBackend, HostBackend)
    assert type(init_backend(BackendPreference.AUTO)) is LargeBackend
    assert type(init_backend("auto")) is LargeBackend


def test_auto_takes_a_software_gpu_only_when_nothing_else_fits():
    _replace_builtins(SoftwareGpuBackend, SmallBackend, LargeBackend)
    assert type(init_backend()) is SmallBackend
    assert SoftwareGpuBackend.constructed == 1 and SoftwareGpuBackend.closed == 1  # started, then given back
    assert type(init_backend(BackendPreference.WEBGPU)) is SoftwareGpuBackend  # asked by name: taken
    _replace_builtins(SoftwareGpuBackend, BrokenBackend, "atlas_no_such_package_xyz:Backend")
    backend = init_backend("auto")
    assert type(backend) is SoftwareGpuBackend
    closed = SoftwareGpuBackend.closed
    _replace_builtins(SoftwareGpuBackend, SmallBackend, LargeBackend)
    assert type(init_backend_with_memory_check("auto", 2000)) is LargeBackend  # Small too small, software deferred
    assert SoftwareGpuBackend.closed == closed + 1


def test_explicit_preferences_start_exactly_that_backend():
    _replace_builtins(LargeBackend, SmallBackend, HostBackend)
    assert type(init_backend(BackendPreference.CPU)) is HostBackend
    assert type(init_backend(BackendPreference.WASM)) is SmallBackend
    assert type(init_backend(BackendPreference.WEBGPU)) is LargeBackend
    register_backend("probed", ProbedBackend)
    assert type(init_backend("probed")) is ProbedBackend
    _replace_builtins(LargeBackend, SmallBackend, BrokenBackend)
    with pytest.raises(BackendUnavailable, match="cpu: backend 'cpu' failed to start: RuntimeError: no device here"):
        init_backend(BackendPreference.CPU)


def test_auto_with_nothing_startable_lists_every_failure():
    _replace_builtins(BrokenBackend, RefusingBackend, "atlas_no_such_package_xyz:Backend")
    with pytest.raises(BackendUnavailable) as info:
        init_backend()
    message = str(info.value)
    assert "webgpu: " in message and "no device here" in message
    assert "wasm: the adapter refused" in message
    assert "cpu: " in message and "atlas_no_such_package_xyz" in message
    with pytest.raises(BackendUnavailable, match="BackendPreference or a backend name"):
        init_backend(3)


def test_memory_check_uses_reported_max_memory():
    _replace_builtins(SmallBackend, LargeBackend, HostBackend)
    backend = init_backend_with_memory_check(BackendPreference.AUTO, 4096)
    assert type(backend) is LargeBackend
    assert SmallBackend.closed >= 1  # the one that was too small was closed
    assert type(init_backend_with_memory_check(BackendPreference.AUTO, 1000)) is SmallBackend


def test_memory_check_allocates_when_max_memory_is_unknown_and_returns_a_fresh_backend():
    _replace_builtins(SmallSilentBackend, LargeSilentBackend, HostBackend)
    backend = init_backend_with_memory_check("auto", 5000)
    assert type(backend) is LargeSilentBackend
    assert backend.allocate_buffer(16) == 2  # the trial allocation happened on another instance
    assert len(backend.data) == 1


def test_memory_check_failures():
    _replace_builtins(SmallBackend, SmallSilentBackend, BrokenBackend)
    with pytest.raises(AllocationFailed) as info:
        init_backend_with_memory_check(BackendPreference.AUTO, 2000)
    message = str(info.value)
    assert "webgpu: max_memory is 1000 bytes, 2000 asked" in message
    assert "wasm: allocating 2000 bytes failed" in message
    assert "cpu: " in message and "no device here" in message
    with pytest.raises(BackendUnavailable, match="could start"):
        init_backend_with_memory_check(BackendPreference.CPU, 10)
    for bad in (-1, 1.5, None, True):
        with pytest.raises(AllocationFailed, match="non-negative int"):
            init_backend_with_memory_check(BackendPreference.AUTO, bad)


def _install_plugin(tmp_path, monkeypatch, entries: str) -> None:
    """A real installed distribution declaring ``entries`` in the atlas_web.backends group."""
    dist = tmp_path / "atlas_fake_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: atlas-fake-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{entries}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry._REGISTRY, "entries", {n: e for n, e in registry._REGISTRY.entries.items()
                                                          if e.source != "plugin"})
    monkeypatch.setattr(registry._REGISTRY, "plugins_loaded", False)


def test_entry_point_plugins_are_discovered(tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch,
                    "hostplug = tests.test_registry:LargeBackend\nfutureplug = tests.test_registry:FutureBackend")
    names = registered_backends()
    assert "hostplug" in names and "futureplug" in names
    assert type(get_backend("hostplug")) is LargeBackend
    statuses = {s.name: s for s in discover_backends()}
    assert statuses["hostplug"].available
    future = statuses["futureplug"]
    assert not future.available
    assert "plugin backend 'futureplug' (tests.test_registry:FutureBackend)" in future.reason
    assert f"needs API version {API_VERSION}" in future.reason


def test_plugin_cannot_take_a_builtin_name(tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch, "cpu = tests.test_registry:HostBackend")
    with pytest.warns(RuntimeWarning, match="plugin backend 'cpu'.*ignored"):
        registered_backends()
    assert registry._REGISTRY.entries["cpu"].source == "built-in"


def test_command_line_lists_backends():
    result = subprocess.run([sys.executable, "-m", "atlas_web", "backends"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("atlas-web backends")
    assert {line.split()[0] for line in lines[1:]} >= {"cpu", "wasm", "webgpu"}
    help_result = subprocess.run([sys.executable, "-m", "atlas_web", "--help"], capture_output=True, text=True)
    assert help_result.returncode == 0 and "backends" in help_result.stdout
    bad = subprocess.run([sys.executable, "-m", "atlas_web", "nonsense"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
