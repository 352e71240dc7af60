"""The wasm backend's thread policy: which work of a launch goes to several threads, and how it is cut.

The code generator (``lowering``) asks this module whether a module imports ``env.parallel_map``,
``env.parallel_reduce`` or ``env.parallel_lanes`` (the thresholds), and the host (``backend``) asks it
how to cut the work it hands to the runner's threads (``chunk_ranges``). Nothing here emits code.

The thresholds were measured with the benchmarks on 2 cores (wall time); below them, waking the
workers costs more than the split saves. Cutting never changes results: chunk starts are multiples
of what the generated code steps by, and reductions fold fixed chunks in order, so the bits are the
same on every thread count and in the browser (Web Workers, or one thread where the page cannot have them).
"""

from __future__ import annotations

__all__ = ["PARALLEL_MAP_THRESHOLDS", "PARALLEL_MAP_THRESHOLD", "parallel_map_threshold", "SHARE_DIVISOR",
           "MIN_CHUNK_ELEMENTS", "chunk_ranges", "REDUCE_CHUNK_ELEMENTS", "PARALLEL_REDUCE_THRESHOLD",
           "reduce_chunk_count", "PARALLEL_LANES_THRESHOLD", "parallel_lanes_wanted", "PARALLEL_GEMM_THRESHOLD",
           "gemm_row_ranges"]

#: the fewest elements a ParallelMap/ParallelMapBinary must have before it is split over threads, by the
#: cost of its operation. Measured on 2 cores (wall time, f32, idle machine): two threads break even with
#: one at about 1M elements for Exp (1.55x at 2M-4M) and at about 2M for Add/Abs (1.4-1.5x at 4M); below,
#: waking the workers (tens of us in this VM, more when other processes hold the cores) and the slower
#: per-thread speed while both run cost more than the split saves
PARALLEL_MAP_THRESHOLDS = {"math library": 1 << 20, "arithmetic": 1 << 21}
#: the smallest of them
PARALLEL_MAP_THRESHOLD = min(PARALLEL_MAP_THRESHOLDS.values())

#: how a parallel map (or a reduction's chunks, or a launch's lanes) is cut: each piece takes
#: 1 / (SHARE_DIVISOR * threads) of what is left (guided self-scheduling: pieces shrink toward the end), at
#: least ``MIN_CHUNK_ELEMENTS`` (one chunk for a reduction). Threads take the next piece when done, so a
#: thread that starts late does less, and the last pieces are small: the threads finish within one small
#: piece of each other. The big first pieces keep the calls few (about 17 for a 16M-element Sum on 2
#: threads, 20-25 for a 16M map). The earlier cut, 8 equal pieces per thread, left the calling thread
#: waiting for the worker's last 1M-element piece (0.2-0.3 ms of Chromium's Sum 16M on 2 threads)
SHARE_DIVISOR = 2
MIN_CHUNK_ELEMENTS = 1 << 14

#: elements per chunk of a chunked reduction (a multiple of every vector width and of the F32 block);
#: fixed, so the partials (and the result's bits) do not depend on the thread count
REDUCE_CHUNK_ELEMENTS = 1 << 16
#: the fewest elements a reduction needs before its chunks go to several threads. Measured on 2 cores
#: (wall time, best of 30, interleaved, f32 Sum and i32 Max): two threads break even with one at about
#: 4M elements (the 16 MiB still come from the cache), gain 1.2x at 6M and 1.4-1.7x at 16M; below,
#: waking the workers (100-150 us in this VM) costs more than the split saves
PARALLEL_REDUCE_THRESHOLD = 1 << 22

#: the fewest SIMD lanes a launch needs before ranges of them go to several threads. Measured on 2 cores
#: (wall time, interleaved, best of 20, the per-lane LDG, LDG, ADD, STG f32 kernel of
#: benchmarks/wasm_vs_numpy.py): two threads break even at about 1M lanes (1.1x), gain 1.5x from 2M
PARALLEL_LANES_THRESHOLD = 1 << 21

#: the fewest multiply-adds (m * n * k) a GEMM needs before ranges of its rows go to several threads (each
#: thread packs B's panels again, and waking the workers costs 100-150 us in this VM: 2**24 is ~1 ms of one
#: thread's work)
PARALLEL_GEMM_THRESHOLD = 1 << 24


def parallel_map_threshold(operation: object) -> int:
    """The fewest elements a map of ``operation`` needs to run on several threads (arithmetic computed
    inline costs less per element than a math-library function, so it needs more)."""
    from .lowering.coop_map import BINARY_OPERATIONS, MAP_OPERATIONS  # the generator knows what is inline
    arithmetic = operation in MAP_OPERATIONS or operation in BINARY_OPERATIONS
    return PARALLEL_MAP_THRESHOLDS["arithmetic" if arithmetic else "math library"]


def chunk_ranges(count: int, threads: int, per_chunk: int, min_elements: int = MIN_CHUNK_ELEMENTS
                 ) -> list[tuple[int, int]]:
    """Ranges ``(lo, hi)`` covering ``0 .. count`` in order, shrinking toward the end: each takes
    ``1 / (SHARE_DIVISOR * threads)`` of what is left, at least ``min_elements`` (the last may have fewer),
    every ``lo`` a multiple of ``per_chunk`` (so each element takes the vector or scalar code it takes in
    one call over the whole range, and every vector access stays 16-byte aligned). Cuts the elements of a
    parallel map, the fixed chunks of a reduction (``count`` chunks, ``per_chunk`` and ``min_elements`` 1)
    and the lanes of a SIMD lane-mode launch. A pure function of its arguments."""
    share = SHARE_DIVISOR * max(threads, 1)
    smallest = max(per_chunk, -(-max(min_elements, 1) // per_chunk) * per_chunk)
    ranges = []
    lo = 0
    while lo < count:
        step = -(-(count - lo) // share)
        step = max(smallest, -(-step // per_chunk) * per_chunk)
        ranges.append((lo, min(lo + step, count)))
        lo += step
    return ranges


def gemm_row_ranges(rows: int, threads: int, step: int) -> list[tuple[int, int]]:
    """At most one range of ``0 .. rows`` per thread, starts multiples of ``step`` (whole register tiles): each
    range needs scratch of its own, so a GEMM is not cut finer than its threads."""
    per = -(-rows // max(threads, 1))
    per = max(step, -(-per // step) * step)
    return [(lo, min(lo + per, rows)) for lo in range(0, rows, per)]


def reduce_chunk_count(count: int) -> int:
    """The chunks of a chunked reduction over ``count`` elements."""
    return -(-count // REDUCE_CHUNK_ELEMENTS)


def parallel_lanes_wanted(parallel: bool, config) -> bool:
    """Whether a module (``parallel``: compiled for several threads) for launches of ``config`` imports
    ``env.parallel_lanes`` (its SIMD function, if it gets one, may then use it)."""
    return parallel and config.total_threads >= PARALLEL_LANES_THRESHOLD
