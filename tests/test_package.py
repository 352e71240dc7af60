"""The package's public vocabulary: ``from atlas_web import *`` gives everything the seed example and the
README tour use, and works without NumPy (as under Pyodide offline), where only the reference backend is
missing from it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import atlas_web

SEED = textwrap.dedent("""
    program = ProgramBuilder().add(ParallelMapBinary(
        dst_array=Address.BufferOffset(handle=4), src_a=Address.BufferOffset(handle=2),
        src_b=Address.BufferOffset(handle=3), count=256, operation=BinaryMapOperation.Add,
    )).add(EXIT()).build()
    assert Program.from_bytes(program.to_bytes()) == program
    assert isinstance(LaunchConfig.linear(256), LaunchConfig) and issubclass(AtlasTrap, AtlasError)
""")


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_star_import_works_without_numpy_and_builds_the_seed_program():
    out = _run("import sys\nsys.modules['numpy'] = None  # as if NumPy were not installed\n"
               "from atlas_web import *\n" + SEED + "print('CpuBackend' in dir(), 'init_backend' in dir())")
    assert out == "False True"


def test_star_import_with_numpy_runs_the_seed_vector_add():
    out = _run("import array\nfrom atlas_web import *\n" + SEED + textwrap.dedent("""
        backend = CpuBackend()
        a, b, c = (backend.allocate_typed(array.array("f", [float(i * k) for i in range(256)])) for k in (1, 2, 0))
        backend.execute_program(program, LaunchConfig.linear(256))
        print(backend.copy_typed_from(c, Type.F32)[:4].tolist())
    """))
    assert out == "[0.0, 3.0, 6.0, 9.0]"


def test_every_public_name_resolves():
    missing = [name for name in atlas_web.__all__ if not hasattr(atlas_web, name)]
    assert not missing
    assert {"CpuBackend", "ProgramCache", "RingBuffer", "Pool", "init_backend", "verify", "parse_program"} <= set(atlas_web.__all__)
