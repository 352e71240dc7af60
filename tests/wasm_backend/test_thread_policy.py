"""The wasm thread policy (``wasm_backend.thread_policy``): thresholds and how work is cut for the threads.

These need no runner: they check the cutting that makes results bit-identical on every thread count
(the runs themselves are in test_parallel_maps/_reduce/_lanes).
"""

from __future__ import annotations

import pytest

from atlas_web.isa import BinaryMapOperation, MapOperation
from wasm_backend.lowering.simd_function import LANES_PER_RANGE_STEP
from wasm_backend.thread_policy import (
    MIN_CHUNK_ELEMENTS, PARALLEL_LANES_THRESHOLD, PARALLEL_MAP_THRESHOLD, PARALLEL_MAP_THRESHOLDS,
    PARALLEL_REDUCE_THRESHOLD, REDUCE_CHUNK_ELEMENTS, SHARE_DIVISOR, chunk_ranges, parallel_lanes_wanted, parallel_map_threshold,
    reduce_chunk_count,
)
from atlas_web import LaunchConfig

MAP_COUNT = max(PARALLEL_MAP_THRESHOLDS.values()) + 4099
REDUCE_COUNT = PARALLEL_REDUCE_THRESHOLD + 4099


@pytest.mark.parametrize("count, threads, per_chunk", [
    (MAP_COUNT, 2, 4), (MAP_COUNT, 3, 8), (MAP_COUNT, 7, 2), (17, 8, 16), (PARALLEL_MAP_THRESHOLD, 2, 1), (5, 1, 4),
    (1 << 24, 2, 4)])
def test_chunks_cover_the_range_in_order_and_start_on_vector_boundaries(count, threads, per_chunk):
    chunks = chunk_ranges(count, threads, per_chunk)
    assert chunks[0][0] == 0 and chunks[-1][1] == count
    assert all(a_hi == b_lo for (_, a_hi), (b_lo, _) in zip(chunks, chunks[1:]))
    assert all(lo % per_chunk == 0 and lo < hi for lo, hi in chunks)
    assert len(chunks) == 1 or all(hi - lo >= MIN_CHUNK_ELEMENTS for lo, hi in chunks[:-1])


@pytest.mark.parametrize("count, threads, per_chunk, min_elements", [
    (MAP_COUNT, 2, 4, MIN_CHUNK_ELEMENTS), (1 << 24, 2, 16, MIN_CHUNK_ELEMENTS), (1 << 24, 8, 4, MIN_CHUNK_ELEMENTS),
    (256, 2, 1, 1), (REDUCE_COUNT // REDUCE_CHUNK_ELEMENTS + 1, 3, 1, 1)])
def test_pieces_shrink_toward_the_end_so_threads_finish_together(count, threads, per_chunk, min_elements):
    """Each piece takes 1 / (SHARE_DIVISOR * threads) of what is left (rounded up to whole vector chunks), at
    least min_elements: so they never grow, the first is a fair share and the last ones are the smallest."""
    chunks = chunk_ranges(count, threads, per_chunk, min_elements)
    sizes = [hi - lo for lo, hi in chunks]
    assert all(a >= b for a, b in zip(sizes, sizes[1:]))
    first_share = -(-count // (SHARE_DIVISOR * threads))
    assert first_share <= sizes[0] < first_share + per_chunk
    assert max(sizes[-threads:]) <= max(min_elements, per_chunk) + per_chunk
    for (lo, hi), size in zip(chunks[:-1], sizes):
        assert size >= -(-(count - lo) // (SHARE_DIVISOR * threads))   # a share of what was left
    assert len(chunks) < 12 * threads * SHARE_DIVISOR   # few calls: the first pieces are big


def test_reduction_chunk_groups_cover_every_chunk_once_in_order():
    chunks = reduce_chunk_count(REDUCE_COUNT)
    assert chunks == -(-REDUCE_COUNT // REDUCE_CHUNK_ELEMENTS) and reduce_chunk_count(0) == 0
    for threads in (2, 3, 8):
        groups = chunk_ranges(chunks, threads, 1, 1)
        assert [c for lo, hi in groups for c in range(lo, hi)] == list(range(chunks))
        assert len(groups) > 1


def test_lane_ranges_start_on_whole_unrolled_steps():
    covered = PARALLEL_LANES_THRESHOLD + 3 * LANES_PER_RANGE_STEP + 4
    for threads in (2, 3, 8):
        ranges = chunk_ranges(covered, threads, LANES_PER_RANGE_STEP)
        assert ranges[0][0] == 0 and ranges[-1][1] == covered and len(ranges) > 1
        assert all(lo % LANES_PER_RANGE_STEP == 0 for lo, _ in ranges)
        assert all(a_hi == b_lo for (_, a_hi), (b_lo, _) in zip(ranges, ranges[1:]))


def test_arithmetic_maps_need_more_elements_than_math_library_maps():
    assert parallel_map_threshold(MapOperation.Exp) == PARALLEL_MAP_THRESHOLD == min(PARALLEL_MAP_THRESHOLDS.values())
    assert parallel_map_threshold(BinaryMapOperation.Add) == parallel_map_threshold(MapOperation.Abs) > \
        parallel_map_threshold(BinaryMapOperation.Pow) == parallel_map_threshold(MapOperation.Exp)


def test_lanes_go_parallel_only_in_threaded_modules_at_the_threshold():
    assert parallel_lanes_wanted(True, LaunchConfig.linear(PARALLEL_LANES_THRESHOLD, 64))
    assert not parallel_lanes_wanted(True, LaunchConfig.linear(PARALLEL_LANES_THRESHOLD - 64, 64))
    assert not parallel_lanes_wanted(False, LaunchConfig.linear(PARALLEL_LANES_THRESHOLD, 64))
