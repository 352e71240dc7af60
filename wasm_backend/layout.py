"""The layout of the one linear memory every compiled module of a WasmBackend imports ("env", "memory").

::

    0      .. 64        never used (address 0 stays zero)
    64     .. 256       the runtime header (HEADER_* below: trap record and its numbers, device table, budget,
                        launch area)
    256    .. 1280      the Atlas tables (classify, mirror, degree, neighbours), written by modules that use them
    1536   .. 2304      the 96 ResAccum sums (f64)
    4096   ..           the arena (atlas_web.memory.ArenaAllocator): the device handle table, the boundary
                        memory (handle 1), buffers, pools and the per-launch area

The device handle table has one ``TABLE_ENTRY_BYTES`` entry per handle (base, size, kind); entry 0 and the
entries of freed handles are zero, so a stale or null pointer finds kind ``KIND_NONE`` and traps
INVALID_HANDLE. The table lives in the arena and moves when it grows: generated code reads its base and
capacity from the header.

Everything here is a plain constant: the host writes the header with ``struct``, the code generators
emit loads and stores at these addresses.
"""

from __future__ import annotations

from atlas_web import atlas
from atlas_web.trap_report import RECORD_NUMBERS
from atlas_web.memory import KIND_BOUNDARY, KIND_BUFFER, KIND_CODES, KIND_NONE, KIND_POOL  # device table codes

__all__ = [
    "HEADER", "HEADER_TRAP_CODE", "HEADER_TRAP_INDEX", "HEADER_TRAP_LANE", "HEADER_COOP_AT",
    "HEADER_TABLE_BASE", "HEADER_TABLE_CAPACITY", "HEADER_BUDGET", "HEADER_LAUNCH_BASE", "HEADER_TRAP_NUMBERS",
    "HEADER_END",
    "ATLAS_TABLES", "CLASSIFY_AT", "MIRROR_AT", "DEGREE_AT", "NEIGHBOURS_AT", "ATLAS_TABLE_BYTES",
    "RES_SUMS", "RES_SUMS_BYTES", "ARENA_START", "TABLE_ENTRY_BYTES", "TABLE_ENTRY_SHIFT",
    "ENTRY_BASE", "ENTRY_SIZE", "ENTRY_KIND", "KIND_NONE", "KIND_BUFFER", "KIND_POOL", "KIND_BOUNDARY",
    "KIND_CODES", "INITIAL_TABLE_CAPACITY", "STATUS_DONE", "STATUS_TRAPPED", "atlas_table_bytes",
]

HEADER = 64
#: i32: TrapCode of the recorded trap (0: none)
HEADER_TRAP_CODE = HEADER + 0
#: i32: instruction index of the recorded trap
HEADER_TRAP_INDEX = HEADER + 4
#: i32: global lane id of the recorded trap (-1: a cooperative step)
HEADER_TRAP_LANE = HEADER + 8
#: i32: the cooperative instruction the lanes of the last stage stopped at (-1: every lane ended)
HEADER_COOP_AT = HEADER + 12
#: i32: byte address of the device handle table
HEADER_TABLE_BASE = HEADER + 16
#: i32: entries in the device handle table (handles at or above it are invalid)
HEADER_TABLE_CAPACITY = HEADER + 20
#: i64: backward jumps each lane may take in this launch
HEADER_BUDGET = HEADER + 24
#: i32: byte address of the per-launch area (presets, results, records, shared memory)
HEADER_LAUNCH_BASE = HEADER + 32
#: i64 x trap_report.RECORD_NUMBERS: the recorded trap's numbers (operand, handle, value, extent, limit),
#: written only with the trap
HEADER_TRAP_NUMBERS = HEADER + 64
HEADER_END = HEADER + 64 + 8 * RECORD_NUMBERS

ATLAS_TABLES = 256
CLASSIFY_AT = ATLAS_TABLES
MIRROR_AT = CLASSIFY_AT + 256
DEGREE_AT = MIRROR_AT + 128
NEIGHBOURS_AT = DEGREE_AT + 128
ATLAS_TABLE_BYTES = NEIGHBOURS_AT + atlas.NUM_CLASSES * atlas.MAX_DEGREE - ATLAS_TABLES

RES_SUMS = 1536
RES_SUMS_BYTES = atlas.NUM_CLASSES * 8
ARENA_START = 4096

TABLE_ENTRY_BYTES = 16
TABLE_ENTRY_SHIFT = 4
ENTRY_BASE = 0
ENTRY_SIZE = 4
ENTRY_KIND = 8
INITIAL_TABLE_CAPACITY = 1024


#: what the exported ``launch`` function returns
STATUS_DONE = 0
STATUS_TRAPPED = 1


def atlas_table_bytes() -> bytes:
    """The bytes of the Atlas tables region (a data segment at ATLAS_TABLES)."""
    out = bytearray(ATLAS_TABLE_BYTES)
    for at, table in ((CLASSIFY_AT, atlas.CLASSIFY_TABLE), (MIRROR_AT, atlas.MIRROR_TABLE),
                      (DEGREE_AT, atlas.DEGREE_TABLE), (NEIGHBOURS_AT, atlas.NEIGHBOUR_TABLE)):
        out[at - ATLAS_TABLES:at - ATLAS_TABLES + len(table)] = table
    return bytes(out)


assert HEADER_END <= ATLAS_TABLES and ATLAS_TABLES + ATLAS_TABLE_BYTES <= RES_SUMS
assert RES_SUMS + RES_SUMS_BYTES <= ARENA_START
