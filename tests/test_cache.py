"""ProgramCache: LRU order, capacity, program keys by digest, get_or_build."""

from __future__ import annotations

import threading

import pytest

from atlas_web import AllocationFailed, Program, ProgramCache
from atlas_web.isa import EXIT, MOV_IMM, Register, Type


def _program(value: int) -> Program:
    return Program([MOV_IMM(dst=Register(1), value=value, ty=Type.U32), EXIT()])


def test_equal_programs_share_an_entry_by_digest():
    cache = ProgramCache(4)
    stored = cache.insert(_program(1), "compiled-1")
    assert stored == "compiled-1"
    twin = _program(1)
    assert twin is not _program(1)
    assert cache.contains(twin) and twin in cache
    assert cache.get(twin) == "compiled-1"
    assert cache.get(twin.digest()) == "compiled-1"
    assert cache.get(_program(2)) is None
    assert cache.get(_program(2), "absent") == "absent"
    assert (cache.hits, cache.misses) == (2, 2)


def test_insert_without_value_stores_the_program_itself():
    cache = ProgramCache(2)
    program = _program(7)
    assert cache.insert(program) is program
    assert cache.get(program.digest()) is program
    with pytest.raises(TypeError):
        cache.insert("not-a-program")


def test_least_recently_used_entry_is_evicted():
    cache = ProgramCache(2)
    a, b, c = _program(1), _program(2), _program(3)
    cache.insert(a, "a")
    cache.insert(b, "b")
    assert cache.get(a) == "a"          # a is now the most recent
    cache.insert(c, "c")                # evicts b
    assert len(cache) == 2
    assert a in cache and c in cache and b not in cache
    assert cache.contains(a)            # contains does not refresh: a stays older than c
    cache.insert(b, "b")                # evicts a
    assert a not in cache and b in cache and c in cache


def test_reinserting_replaces_the_value_without_growing():
    cache = ProgramCache(2)
    cache.insert(_program(1), "old")
    cache.insert(_program(1), "new")
    assert len(cache) == 1 and cache.get(_program(1)) == "new"


def test_get_or_build_builds_once_per_key_and_shape():
    cache = ProgramCache(8)
    calls = []

    def factory(tag):
        def build():
            calls.append(tag)
            return f"pipeline-{tag}"
        return build

    program = _program(5)
    assert cache.get_or_build((program, (64, 1, 1)), factory("64")) == "pipeline-64"
    assert cache.get_or_build((_program(5), (64, 1, 1)), factory("again")) == "pipeline-64"
    assert cache.get_or_build((program, (128, 1, 1)), factory("128")) == "pipeline-128"
    assert calls == ["64", "128"]
    assert (program.digest(), (64, 1, 1)) in cache
    assert (cache.hits, cache.misses) == (1, 2)


def test_a_failing_factory_stores_nothing():
    cache = ProgramCache(2)

    def broken():
        raise RuntimeError("compile failed")

    with pytest.raises(RuntimeError, match="compile failed"):
        cache.get_or_build("key", broken)
    assert "key" not in cache and len(cache) == 0


def test_concurrent_builders_agree_on_one_value():
    cache = ProgramCache(2)
    barrier = threading.Barrier(4)
    results = []

    def worker(i):
        def build():
            return f"value-{i}"
        barrier.wait()
        results.append(cache.get_or_build("shared", build))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and results[0] == cache.get("shared")


def test_remove_and_clear():
    cache = ProgramCache(3)
    cache.insert(_program(1), 1)
    cache.insert(_program(2), 2)
    assert cache.remove(_program(1)) is True
    assert cache.remove(_program(1)) is False
    cache.get(_program(2))
    cache.clear()
    assert len(cache) == 0 and (cache.hits, cache.misses) == (0, 0)
    assert "ProgramCache 0/3" in repr(cache)


@pytest.mark.parametrize("capacity", [0, -1, 1.5, True, "8", None])
def test_bad_capacity_is_refused(capacity):
    with pytest.raises(AllocationFailed, match="capacity"):
        ProgramCache(capacity)


def test_unhashable_key_is_a_type_error():
    with pytest.raises(TypeError):
        ProgramCache(1).get(["list"])


def _recording_cache(capacity: int, **options):
    left = []
    return ProgramCache(capacity, on_evict=lambda key, value: left.append((key, value)), **options), left


def test_on_evict_gets_the_least_recently_used_entry_when_full():
    cache, left = _recording_cache(2)
    a, b, c = _program(1), _program(2), _program(3)
    cache.insert(a, "a")
    cache.insert(b, "b")
    cache.get(a)
    cache.insert(c, "c")
    assert left == [(b.digest(), "b")] and cache.evictions == 1
    assert cache.keys() == [a.digest(), c.digest()]


def test_on_evict_gets_removed_replaced_and_cleared_values():
    cache, left = _recording_cache(4, plain_keys=True)
    cache.insert(("k", 1), "one")
    cache.insert(("k", 1), "one")            # the same value again: nothing leaves
    cache.insert(("k", 1), "uno")            # replaced: the old value leaves
    cache.insert(("k", 2), "two")
    cache.insert(("k", 3), "three")
    assert cache.pop(("k", 2)) == "two" and cache.pop(("k", 2), "none") == "none"
    assert cache.remove_where(lambda key, value: value == "three") == 1
    cache.clear()
    assert left == [(("k", 1), "one"), (("k", 2), "two"), (("k", 3), "three"), (("k", 1), "uno")]
    assert cache.evictions == 0 and len(cache) == 0


def test_get_or_build_race_loser_is_evicted():
    cache, left = _recording_cache(2, plain_keys=True)

    def build_twice():
        cache.insert("key", "first")         # another thread inserted while this one built
        return "second"

    assert cache.get_or_build("key", build_twice) == "first"
    assert left == [("key", "second")] and cache.get("key") == "first"


def test_on_evict_may_use_the_cache_and_every_callback_runs_when_one_raises():
    calls = []

    def on_evict(key, value):
        calls.append(key)
        assert key not in cache              # the cache changed before the callback, and it is not locked
        if key == "a":
            raise RuntimeError("release failed")

    cache = ProgramCache(3, on_evict=on_evict, plain_keys=True)
    for key in "abc":
        cache.insert(key, key.upper())
    with pytest.raises(RuntimeError, match="release failed"):
        cache.clear()
    assert calls == ["a", "b", "c"] and len(cache) == 0


def test_plain_keys_are_used_as_given():
    cache = ProgramCache(2, plain_keys=True)
    program = _program(4)
    cache.insert(program.digest(), "by digest")
    assert cache.get(program.digest()) == "by digest"
    assert cache.get(program) is None         # a Program is not converted to its digest
    with pytest.raises(TypeError):
        cache.get(["unhashable"])


def test_bad_on_evict_is_refused():
    with pytest.raises(TypeError, match="on_evict"):
        ProgramCache(2, on_evict="not callable")


def test_concurrent_inserts_stay_bounded_and_evict_each_value_once():
    cache, left = _recording_cache(8, plain_keys=True)

    def worker(base):
        for i in range(200):
            cache.insert((base, i), (base, i))
            cache.get((base, i - 3))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 8 and len(left) == 800 - 8 and len(set(left)) == len(left)
    assert set(cache.values()).isdisjoint(value for _key, value in left)


def test_the_remembered_last_entry_is_forgotten_when_its_value_leaves():
    cache = ProgramCache(2, plain_keys=True)
    value = cache.insert("a", ["compiled a"])
    cache.remember(("marker",), value)
    assert cache.last == (("marker",), value)
    cache.insert("b", "B")
    cache.insert("a", ["compiled a"])          # replaced by another (equal) value: the remembered one left
    assert cache.last is None
    cache.remember("m", cache.get("a"))
    cache.insert("c", "C")                      # evicts b, not a
    assert cache.last is not None
    cache.insert("d", "D")                      # evicts a
    assert cache.last is None
    cache.remember("m", cache.get("d"))
    cache.clear()
    assert cache.last is None
