"""RingBuffer: the host's circular byte buffer keeps the newest `capacity` bytes in constant memory."""

from __future__ import annotations

import array
import tracemalloc

import pytest
from hypothesis import given, strategies as st

from atlas_web import AllocationFailed, InvalidBuffer, RingBuffer


def test_write_then_read_before_wrapping():
    pool = RingBuffer(8)
    assert pool.write(b"abc") == 3
    assert len(pool) == 3 and pool.capacity == 8
    assert pool.read() == b"abc"
    assert pool.read(1, 2) == b"bc"
    assert pool.read(3, 0) == b""


def test_full_pool_overwrites_the_oldest_bytes():
    pool = RingBuffer(5)
    pool.write(b"abcd")
    pool.write(b"efg")
    assert len(pool) == 5
    assert pool.read() == b"cdefg"
    assert pool.read(0, 1) == b"c" and pool.read(4, 1) == b"g"
    assert pool.read(2, 3) == b"efg"
    assert pool.total_written == 7


def test_data_longer_than_the_capacity_keeps_its_tail():
    pool = RingBuffer(4)
    pool.write(b"xy")
    pool.write(b"0123456789")
    assert pool.read() == b"6789" and len(pool) == 4


def test_any_contiguous_buffer_is_accepted():
    pool = RingBuffer(16)
    pool.write(array.array("I", [1, 2]))
    pool.write(memoryview(b"zz"))
    pool.write(bytearray(b"!"))
    assert pool.read() == (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + b"zz!"


@given(st.integers(1, 40), st.lists(st.binary(max_size=60), max_size=20))
def test_pool_holds_the_newest_bytes_of_the_stream(capacity, chunks):
    pool = RingBuffer(capacity)
    for chunk in chunks:
        pool.write(chunk)
    stream = b"".join(chunks)
    assert pool.read() == stream[-capacity:] if stream else pool.read() == b""
    assert len(pool) == min(capacity, len(stream))
    assert pool.total_written == len(stream)
    if len(pool) >= 2:
        assert pool.read(1, len(pool) - 1) == stream[-capacity:][1:]


def test_streaming_uses_constant_memory():
    pool = RingBuffer(4096)
    chunk = bytes(range(256)) * 16
    tracemalloc.start()
    try:
        for _ in range(64):  # warm up
            pool.write(chunk)
        baseline, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(4096):  # 16 MiB through a 4 KiB pool
            pool.write(chunk)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pool.total_written == (64 + 4096) * len(chunk)
    # 16 MiB went through; a copy of even one chunk would show here
    assert current - baseline < 1024
    assert peak - baseline < 2048
    assert pool.read() == chunk[-4096:]


@pytest.mark.parametrize("offset, length", [(0, 4), (3, 1), (-1, 1), (0, -1), (1.0, 1), (True, 0)])
def test_reads_outside_the_bytes_held_are_refused(offset, length):
    pool = RingBuffer(8)
    pool.write(b"abc")
    with pytest.raises(InvalidBuffer, match="RingBuffer.read"):
        pool.read(offset, length)


def test_non_buffers_are_refused():
    with pytest.raises(InvalidBuffer, match="bytes-like"):
        RingBuffer(4).write(42)
    with pytest.raises(InvalidBuffer, match="contiguous"):
        RingBuffer(4).write(memoryview(b"abcdef")[::2])


@pytest.mark.parametrize("capacity", [0, -3, 2.0, None, False])
def test_bad_capacity_is_refused(capacity):
    with pytest.raises(AllocationFailed, match="capacity"):
        RingBuffer(capacity)


def test_clear_and_bytes():
    pool = RingBuffer(3)
    pool.write(b"abcd")
    assert bytes(pool) == b"bcd"
    pool.clear()
    assert len(pool) == 0 and pool.read() == b"" and pool.total_written == 0
    pool.write(b"q")
    assert bytes(pool) == b"q" and "1/3" in repr(pool)


def test_an_offset_past_the_bytes_held_is_named_when_no_length_is_given():
    pool = RingBuffer(8)
    pool.write(b"abc")
    assert pool.read(3) == b""
    with pytest.raises(InvalidBuffer, match=r"RingBuffer.read: offset 5 is outside the 3 bytes held \(capacity 8\)"):
        pool.read(5)


def test_the_old_public_name_still_works():
    import atlas_web
    assert atlas_web.Pool is atlas_web.RingBuffer and "RingBuffer" in atlas_web.__all__
