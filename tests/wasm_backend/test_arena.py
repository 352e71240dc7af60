"""ArenaAllocator (atlas_web.memory): first fit, coalescing, alignment, growth and its limit."""

from __future__ import annotations

import random

import pytest

from atlas_web.errors import AllocationFailed, InvalidBuffer
from atlas_web.memory import ArenaAllocator


def test_allocations_are_aligned_distinct_and_first_fit():
    arena = ArenaAllocator(64, 64 + 1024, limit=64 + 1024)
    a = arena.allocate(10)
    b = arena.allocate(17)
    c = arena.allocate(0)
    assert (a, b, c) == (64, 80, 112)
    assert all(x % 16 == 0 for x in (a, b, c))
    arena.free(b)
    assert arena.allocate(16) == 80  # the first free range that fits
    assert arena.used == 16 + 16 + 16


def test_freed_neighbours_coalesce():
    arena = ArenaAllocator(0, 256, limit=256)
    blocks = [arena.allocate(64) for _ in range(4)]
    with pytest.raises(AllocationFailed):
        arena.allocate(1)
    arena.free(blocks[1])
    arena.free(blocks[3])
    arena.free(blocks[2])  # joins 1 and 3 into one range of 192 bytes
    assert arena.free_ranges() == [(64, 192)]
    assert arena.allocate(192) == 64
    arena.free(blocks[0])
    arena.free(64)
    assert arena.free_ranges() == [(0, 256)]


def test_growth_extends_the_last_free_range_up_to_the_limit():
    asked = []

    def grow(end: int) -> int:
        asked.append(end)
        return end + 100  # the grower may give more than asked

    arena = ArenaAllocator(0, 64, limit=4096, grow=grow)
    first = arena.allocate(32)
    second = arena.allocate(64)  # 32 bytes left at the end: grow from there
    assert (first, second) == (0, 32)
    assert asked == [96]
    assert arena.end == 196
    with pytest.raises(AllocationFailed) as failure:
        arena.allocate(8000)
    message = str(failure.value)
    assert "8000 bytes asked" in message and "left" in message


def test_without_a_grower_the_arena_is_fixed():
    arena = ArenaAllocator(0, 128, limit=1 << 20)
    arena.allocate(128)
    with pytest.raises(AllocationFailed, match="16 bytes asked; 1048448 bytes are left"):
        arena.allocate(16)


def test_a_grower_that_falls_short_is_reported():
    arena = ArenaAllocator(0, 0, limit=1 << 20, grow=lambda end: end - 16)
    with pytest.raises(AllocationFailed, match="could only grow"):
        arena.allocate(64)


def test_bad_arguments_and_frees_raise():
    with pytest.raises(AllocationFailed):
        ArenaAllocator(0, 64, limit=64, alignment=12)
    with pytest.raises(AllocationFailed):
        ArenaAllocator(8, 64, limit=64)
    arena = ArenaAllocator(0, 64, limit=64)
    with pytest.raises(AllocationFailed):
        arena.allocate(-1)
    with pytest.raises(InvalidBuffer):
        arena.free(16)
    offset = arena.allocate(4)
    arena.free(offset)
    with pytest.raises(InvalidBuffer):
        arena.free(offset)
    with pytest.raises(InvalidBuffer):
        arena.size_of(offset)


def test_random_allocation_sequences_never_overlap_and_free_everything():
    rng = random.Random(7)
    arena = ArenaAllocator(16, 16, limit=1 << 16, grow=lambda end: end)
    live: dict[int, int] = {}
    for _ in range(600):
        if live and rng.random() < 0.45:
            offset = rng.choice(sorted(live))
            del live[offset]
            arena.free(offset)
        else:
            size = rng.randrange(0, 300)
            try:
                offset = arena.allocate(size)
            except AllocationFailed:
                continue
            assert offset % 16 == 0
            live[offset] = max(16, -(-size // 16) * 16)
        spans = sorted(live.items())
        for (a, sa), (b, _) in zip(spans, spans[1:]):
            assert a + sa <= b
    for offset in list(live):
        arena.free(offset)
    assert arena.used == 0
    ranges = arena.free_ranges()
    assert len(ranges) <= 1
