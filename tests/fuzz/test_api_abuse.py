"""API abuse on every backend (issue 16): random sequences of valid and invalid calls — unknown, freed,
double-freed, bool and huge handles; odd sizes; copies past the end; bad launch configs; use after close;
asyncio cancellation mid-launch; two threads on one backend. Only documented errors (atlas_web.errors) come
out, a refused call changes no buffer, and the backend stays usable.
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest

from atlas_web import AtlasError, BackendClosed, LaunchConfig, Program
from atlas_web.reference import CpuBackend

from tests.conformance.backends import compiled_backends

BACKENDS = {"cpu": CpuBackend(), **compiled_backends()}
_ODD_SIZES = (0, 1, 7, 64, -1, 2 ** 70, True, False, 1.5, "8", None)
_ODD_OFFSETS = (0, 1, 63, 64, 65, -1, 2 ** 64, True)
_STEPS = 150


def _odd_handle(rng, live, dead):
    """A live, freed, unknown, bool, huge or non-int handle (1 is the boundary buffer: a real one)."""
    return rng.choice([*live, *dead, 0, 99_999, -1, 2 ** 70, True, False, None, "2", 2.0] or [0])


def _call(fn, *args):
    """Run one call: None when it worked, else the error (which must be a documented one)."""
    try:
        fn(*args)
        return None
    except AtlasError as e:
        return e


def _abuse(backend, seed: int) -> None:
    rng = random.Random(seed)
    shadow: dict[int, bytearray] = {}
    dead: list[int] = []
    for step in range(_STEPS):
        what = rng.choice(("alloc", "free", "to", "from", "launch"))
        live = list(shadow)
        if what == "alloc":
            size = rng.choice(_ODD_SIZES)
            try:
                h = backend.allocate_buffer(size)
            except AtlasError:
                pass
            else:
                shadow[int(h)] = bytearray(bytes(backend.copy_from_buffer(h)))
        elif what == "free":
            h = _odd_handle(rng, live, dead)
            if _call(backend.free_buffer, h) is None:
                assert type(h) is int and h in shadow, f"free_buffer({h!r}) was accepted"
                del shadow[h]
                dead.append(h)
        elif what == "to":
            h = _odd_handle(rng, live, dead)
            off = rng.choice(_ODD_OFFSETS)
            data = bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 1, 8, 64, 65))))
            if _call(backend.copy_to_buffer, h, data, off) is None:
                assert h in shadow and 0 <= off and off + len(data) <= len(shadow[h]), (h, off, len(data))
                shadow[h][off:off + len(data)] = data
        elif what == "from":
            h = _odd_handle(rng, live, dead)
            _call(backend.copy_from_buffer, h, None, rng.choice(_ODD_OFFSETS))
        else:
            grid = rng.choice(((1, 1, 1), (0, 1, 1), (-1, 1, 1), (2 ** 40, 1, 1), (1, 1)))
            try:
                config = LaunchConfig(grid=grid, block=(1, 1, 1))
            except AtlasError:
                continue
            _call(backend.execute_program, Program.from_text("exit\n"), config)
        for h, want in shadow.items():  # nothing lost: every live buffer holds what was written
            assert bytes(backend.copy_from_buffer(h)) == bytes(want), f"step {step}: buffer {h} changed"
    for h in shadow:
        backend.free_buffer(h)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_random_api_abuse_gives_documented_errors_and_loses_nothing(backend_name):
    _abuse(BACKENDS[backend_name], seed=16)


_SPIN = "mov_imm.u32 r1, 2000\ntop:\nmov_imm.u32 r2, 0\nloop r1, @top\nstg.u32 [buf{h} + 0], r1\n"


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_cancel_execute_async_then_use(backend_name):
    backend = BACKENDS[backend_name]
    h = backend.allocate_buffer(4 * 1024)
    keep = backend.allocate_buffer(16)
    backend.copy_to_buffer(keep, bytes(range(16)))
    program = Program.from_text(_SPIN.format(h=int(h)))

    async def cancel_mid_launch():
        task = asyncio.ensure_future(backend.execute_async(program, LaunchConfig(grid=(4, 1, 1), block=(256, 1, 1))))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, AtlasError):
            pass

    asyncio.run(cancel_mid_launch())
    backend.execute_program(program, LaunchConfig())  # usable afterwards
    assert bytes(backend.copy_from_buffer(keep)) == bytes(range(16))
    backend.free_buffer(h)
    backend.free_buffer(keep)


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_two_threads_on_one_backend(backend_name):
    backend = BACKENDS[backend_name]
    errors = []

    def worker(k):
        try:
            for _ in range(5):
                h = backend.allocate_buffer(64)
                data = bytes([k]) * 64
                backend.copy_to_buffer(h, data)
                backend.execute_program(Program.from_text(f"mov_imm.u8 r1, {k}\nstg.u8 [buf{int(h)} + 3], r1\n"),
                                        LaunchConfig())
                assert bytes(backend.copy_from_buffer(h)) == data
                backend.free_buffer(h)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_use_after_close_raises_backend_closed():
    for name, backend in BACKENDS.items():
        fresh = type(backend)()
        h = fresh.allocate_buffer(8)
        fresh.close()
        for call, args in ((fresh.allocate_buffer, (8,)), (fresh.copy_from_buffer, (h,)), (fresh.free_buffer, (h,)),
                           (fresh.copy_to_buffer, (h, b"x")),
                           (fresh.execute_program, (Program.from_text("exit\n"), LaunchConfig()))):
            with pytest.raises(BackendClosed):
                call(*args)
        fresh.close()
