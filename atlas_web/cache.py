"""ProgramCache: a bounded LRU cache keyed by program digest, for programs and compiled artifacts.

A key is a Program (its ``digest()`` is used, so equal programs share an
entry), a digest string, or any hashable tuple of those and other values; a
backend caches a compiled module or pipeline under ``(program, launch shape)``
with ``get_or_build``. A cache made with ``plain_keys=True`` uses its keys as
given (any hashable value; no Program conversion), which is what the engine
caches (modules by source digest, pipelines, bind groups, recorded launches)
use and what keeps a cached launch's lookups cheap. Values are stored as given,
never copied.

Releasing resources. ``on_evict(key, value)``, when given, is called for every
value that leaves the cache: evicted because the cache is full, removed
(``remove``, ``pop``, ``remove_where``), replaced by ``insert`` under the same
key with another value, or dropped by ``clear``. ``key`` is the dictionary key
(a Program's digest, not the Program). The callback runs after the cache has
changed and outside its lock, so it may use the cache (or another one); an
exception it raises propagates to the caller of the method that evicted, after
the callbacks of the other values that left with it have run.

The last entry. A caller that looks the same thing up again and again (a launch
loop) may ``remember(marker, value)`` after a lookup and check ``last``
(``(marker, value)`` or None) first, by identity, skipping the key's hashing and
the lock; ``last`` turns None when its value leaves the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

from .errors import AllocationFailed
from .program import Program

__all__ = ["ProgramCache", "cache_key"]

_MISSING = object()


def cache_key(key: Any) -> Hashable:
    """The dictionary key of ``key``: a Program becomes its digest, tuples are converted element-wise.

    An unhashable key raises TypeError when it is looked up.
    """
    if type(key) is str:  # a digest: the common case, kept fast for cached launches
        return key
    if isinstance(key, Program):
        return key.digest()
    if isinstance(key, tuple):
        return tuple(map(cache_key, key))
    return key  # an unhashable key raises TypeError where the dictionary looks it up


def _plain(key: Any) -> Hashable:
    return key


class ProgramCache:
    """At most ``capacity`` entries; inserting into a full cache evicts the least recently used.

    ``get``, ``get_or_build`` and ``insert`` mark an entry as most recently
    used; ``contains`` does not. ``hits`` and ``misses`` count ``get`` and
    ``get_or_build`` lookups. ``on_evict(key, value)`` is called for each value
    that leaves the cache (see the module docstring); ``plain_keys`` uses keys
    as given. Thread-safe. Raises AllocationFailed for a capacity that is not a
    positive int, TypeError for an ``on_evict`` that is not callable.
    """

    def __init__(self, capacity: int = 128, *, on_evict: Callable[[Hashable, Any], None] | None = None,
                 plain_keys: bool = False) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise AllocationFailed(f"ProgramCache capacity must be a positive int, got {capacity!r}")
        if on_evict is not None and not callable(on_evict):
            raise TypeError(f"ProgramCache on_evict must be callable or None, got {on_evict!r}")
        self._capacity = capacity
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()
        self._on_evict = on_evict
        self._key: Callable[[Any], Hashable] = _plain if plain_keys else cache_key
        self.hits = 0
        self.misses = 0
        #: values that left the cache because it was full (not removed or cleared)
        self.evictions = 0
        #: ``(marker, value)`` given to ``remember``, until that value leaves the cache; else None
        self.last: tuple[Any, Any] | None = None

    @property
    def capacity(self) -> int:
        """The most entries the cache holds."""
        return self._capacity

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def contains(self, key: Any) -> bool:
        """Whether ``key`` has an entry (does not change the LRU order)."""
        return self._key(key) in self._entries

    def get(self, key: Any, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default`` when there is none."""
        k = self._key(key)
        with self._lock:
            value = self._entries.get(k, _MISSING)
            if value is _MISSING:
                self.misses += 1
                return default
            self._entries.move_to_end(k)
            self.hits += 1
            return value

    def insert(self, key: Any, value: Any = _MISSING) -> Any:
        """Store ``value`` under ``key`` and return it; with no value, a Program key stores itself.

        Replaces an existing entry (``on_evict`` gets the old value unless it is ``value`` itself).
        Raises TypeError when no value is given for a non-Program key.
        """
        if value is _MISSING:
            if not isinstance(key, Program):
                raise TypeError("ProgramCache.insert needs a value unless the key is a Program")
            value = key
        k = self._key(key)
        with self._lock:
            left = self._store(k, value)
        if left:
            self._evicted(left)
        return value

    def _store(self, k: Hashable, value: Any) -> list[tuple[Hashable, Any]]:
        """Store under the lock; returns the (key, value) pairs that left (for ``on_evict``)."""
        entries = self._entries
        old = entries.get(k, _MISSING)
        entries[k] = value
        entries.move_to_end(k)
        left = [] if old is _MISSING or old is value else [(k, old)]
        while len(entries) > self._capacity:
            left.append(entries.popitem(last=False))
            self.evictions += 1
        return left

    def remember(self, marker: Any, value: Any) -> None:
        """Keep ``(marker, value)`` as ``last`` (see the module docstring); ``value`` should be one the cache
        holds (``last`` turns None when it leaves)."""
        self.last = (marker, value)

    def _evicted(self, left: list[tuple[Hashable, Any]]) -> None:
        """Forget ``last`` if its value left; run ``on_evict`` for each pair, all of them even when one
        raises (the first exception is raised)."""
        last = self.last
        if last is not None and any(value is last[1] for _k, value in left):
            self.last = None
        if self._on_evict is None:
            return
        failure: BaseException | None = None
        for k, value in left:
            try:
                self._on_evict(k, value)  # type: ignore[misc]
            except BaseException as error:  # noqa: BLE001 - re-raised below, after the others ran
                failure = failure or error
        if failure is not None:
            raise failure

    def get_or_build(self, key: Any, factory: Callable[[], Any]) -> Any:
        """The value under ``key``; on a miss, ``factory()`` builds it, it is inserted and returned.

        ``factory`` runs without the lock held; if two threads build the same key
        at once, the first value inserted is kept and returned to both (``on_evict``
        gets the other one). An exception from ``factory`` propagates and nothing is stored.
        """
        k = self._key(key)
        with self._lock:
            value = self._entries.get(k, _MISSING)
            if value is not _MISSING:
                self._entries.move_to_end(k)
                self.hits += 1
                return value
            self.misses += 1
        built = factory()
        with self._lock:
            value = self._entries.get(k, _MISSING)
            if value is _MISSING:
                value, left = built, self._store(k, built)
            else:
                self._entries.move_to_end(k)
                left = [(k, built)] if built is not value else []
        if left:
            self._evicted(left)
        return value

    def values(self) -> list:
        """The stored values, least recently used first (a new list; the LRU order is unchanged)."""
        with self._lock:
            return list(self._entries.values())

    def keys(self) -> list:
        """The dictionary keys, least recently used first (a new list; the LRU order is unchanged)."""
        with self._lock:
            return list(self._entries)

    def pop(self, key: Any, default: Any = None) -> Any:
        """Remove the entry of ``key`` and return its value (``default`` when there is none)."""
        k = self._key(key)
        with self._lock:
            value = self._entries.pop(k, _MISSING)
        if value is _MISSING:
            return default
        self._evicted([(k, value)])
        return value

    def remove(self, key: Any) -> bool:
        """Drop the entry of ``key``; returns whether there was one."""
        return self.pop(key, _MISSING) is not _MISSING

    def remove_where(self, predicate: Callable[[Hashable, Any], bool]) -> int:
        """Drop every entry for which ``predicate(key, value)`` is true; returns how many were dropped.
        ``predicate`` runs under the lock: it must not use the cache."""
        with self._lock:
            left = [(k, v) for k, v in self._entries.items() if predicate(k, v)]
            for k, _ in left:
                del self._entries[k]
        if left:
            self._evicted(left)
        return len(left)

    def clear(self) -> None:
        """Drop every entry and reset the hit, miss and eviction counts."""
        with self._lock:
            left = list(self._entries.items())
            self._entries.clear()
            self.hits = 0
            self.misses = 0
            self.evictions = 0
        self.last = None
        if left:
            self._evicted(left)

    def __repr__(self) -> str:
        return f"<ProgramCache {len(self)}/{self._capacity} entries, {self.hits} hits, {self.misses} misses>"
