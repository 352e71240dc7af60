"""The Atlas class tables against every vector and structural fact of shared/atlas-structures.md."""

from __future__ import annotations

import itertools

import pytest

from atlas_web import atlas
from atlas_web.errors import ProgramError

CLASSIFY_VECTORS = {0: 0, 1: 48, 2: 24, 16: 3, 31: 93, 32: 1, 42: 31, 48: 4, 64: 2, 96: 0, 128: 0, 200: 8, 255: 93}
NEIGHBOUR_VECTORS = {
    0: (1, 6, 12, 24, 48),
    1: (0, 2, 7, 13, 25, 49),
    4: (3, 5, 10, 16, 28, 52),
    95: (47, 71, 83, 89, 94),
}
BOUND_MAP_VECTORS = {(1, 2, 3): 12803, (2, 0, 0): 24576, (95, 47, 255): 1179647}


def test_constants():
    assert atlas.NUM_CLASSES == 96
    assert atlas.PAGES == 48
    assert atlas.BYTES_PER_PAGE == 256
    assert atlas.TOTAL_ELEMENTS == 12288
    assert atlas.PHASE_MODULUS == 768
    assert atlas.NUM_EDGES == 256
    assert atlas.BOUNDARY_CELLS == 1179648
    assert atlas.UNITY_CLASSES == (1, 4)
    assert atlas.NO_NEIGHBOUR == 255


def test_labels_round_trip_and_formula():
    seen = set()
    for e1, e2, e3, d45, e6, e7 in itertools.product((0, 1), (0, 1), (0, 1), (-1, 0, 1), (0, 1), (0, 1)):
        label = (e1, e2, e3, d45, e6, e7)
        cid = atlas.class_of(label)
        assert cid == 48 * e1 + 24 * e2 + 12 * e3 + 6 * e6 + 3 * e7 + (d45 + 1)
        assert atlas.label_of(cid) == label
        seen.add(cid)
    assert seen == set(range(96))


@pytest.mark.parametrize("cid, expected", sorted(NEIGHBOUR_VECTORS.items()))
def test_neighbour_vectors(cid, expected):
    assert atlas.neighbours(cid) == expected


def test_edges_degrees_and_order():
    edges = {(a, b) for a in range(96) for b in atlas.neighbours(a)}
    assert all((b, a) in edges for a, b in edges)  # symmetric
    assert len(edges) // 2 == 256
    degrees = [atlas.degree(c) for c in range(96)]
    assert degrees.count(6) == 32 and degrees.count(5) == 64
    for c in range(96):
        nbrs = atlas.neighbours(c)
        assert list(nbrs) == sorted(nbrs) and c not in nbrs
        assert atlas.degree(c) == (6 if atlas.label_of(c)[3] == 0 else 5)
        for n in nbrs:
            a, b = atlas.label_of(c), atlas.label_of(n)
            assert a[5] == b[5]  # e7 never changes along an edge
            diffs = [i for i in range(6) if a[i] != b[i]]
            assert len(diffs) == 1
            if diffs == [3]:
                assert abs(a[3] - b[3]) == 1


def test_mirror():
    pairs = set()
    for c in range(96):
        m = atlas.mirror(c)
        assert m != c and atlas.mirror(m) == c
        assert m == (c + 3 if c % 6 < 3 else c - 3)
        assert m not in atlas.neighbours(c)
        la, lb = atlas.label_of(c), atlas.label_of(m)
        assert la[:5] == lb[:5] and la[5] != lb[5]
        pairs.add(tuple(sorted((c, m))))
    assert (0, 3) in pairs and (1, 4) in pairs and (2, 5) in pairs and (6, 9) in pairs and (92, 95) in pairs
    assert len(pairs) == 48


def test_unity():
    assert [c for c in range(96) if atlas.is_unity(c)] == [1, 4]


@pytest.mark.parametrize("byte, expected", sorted(CLASSIFY_VECTORS.items()))
def test_classify_vectors(byte, expected):
    assert atlas.classify(byte) == expected
    assert atlas.CLASSIFY_TABLE[byte] == expected


def test_classifier_counts():
    counts = [0] * 96
    for b in range(256):
        counts[atlas.classify(b)] += 1
    for c in range(96):
        assert counts[c] == (4 if atlas.label_of(c)[3] == -1 else 2)
    assert all(atlas.classify(b) == atlas.classify(b | 0x80) for b in range(128))


@pytest.mark.parametrize("args, expected", sorted(BOUND_MAP_VECTORS.items()))
def test_bound_map_vectors(args, expected):
    assert atlas.bound_map(*args) == expected


def test_bound_map_bijection():
    values = {atlas.bound_map(c, p, b) for c in range(96) for p in range(48) for b in range(256)}
    assert values == set(range(1179648))


def test_flat_tables():
    assert isinstance(atlas.CLASSIFY_TABLE, bytes) and len(atlas.CLASSIFY_TABLE) == 256
    assert list(atlas.CLASSIFY_TABLE) == [atlas.classify(b) for b in range(256)]
    assert list(atlas.MIRROR_TABLE) == [atlas.mirror(c) for c in range(96)]
    assert list(atlas.DEGREE_TABLE) == [atlas.degree(c) for c in range(96)]
    assert len(atlas.NEIGHBOUR_TABLE) == 96 * 6
    for c in range(96):
        row = tuple(atlas.NEIGHBOUR_TABLE[6 * c: 6 * c + 6])
        n = atlas.degree(c)
        assert row[:n] == atlas.neighbours(c) and all(v == 255 for v in row[n:])


@pytest.mark.parametrize("call", [
    lambda: atlas.label_of(96), lambda: atlas.label_of(-1), lambda: atlas.neighbours(96), lambda: atlas.degree(200),
    lambda: atlas.mirror(96), lambda: atlas.is_unity(96), lambda: atlas.classify(256), lambda: atlas.classify(-1),
    lambda: atlas.bound_map(96, 0, 0), lambda: atlas.bound_map(0, 48, 0), lambda: atlas.bound_map(0, 0, 256),
    lambda: atlas.class_of((0, 0, 0, 2, 0, 0)), lambda: atlas.class_of((0, 0, 0)), lambda: atlas.label_of(True),
])
def test_bad_arguments_raise_program_error(call):
    with pytest.raises(ProgramError):
        call()


def test_imports_without_numpy():
    import subprocess
    import sys
    code = ("import sys; sys.modules['numpy'] = None; import atlas_web.atlas as a; "
            "assert a.classify(42) == 31")
    subprocess.run([sys.executable, "-c", code], check=True)
