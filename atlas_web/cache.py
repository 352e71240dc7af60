"""ProgramCache: a bounded LRU cache keyed by program digest, for programs and compiled artifacts.

A key is a Program (its ``digest()`` is used, so equal programs share an
entry), a digest string, or any hashable tuple of those and other values; a
backend caches a compiled module or pipeline under ``(program, launch shape)``
with ``get_or_build``. Values are stored as given, never copied.
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


class ProgramCache:
    """At most ``capacity`` entries; inserting into a full cache evicts the least recently used.

    ``get``, ``get_or_build`` and ``insert`` mark an entry as most recently
    used; ``contains`` does not. ``hits`` and ``misses`` count ``get`` and
    ``get_or_build`` lookups. Thread-safe. Raises AllocationFailed for a
    capacity that is not a positive int.
    """

    def __init__(self, capacity: int = 128) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise AllocationFailed(f"ProgramCache capacity must be a positive int, got {capacity!r}")
        self._capacity = capacity
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

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
        return cache_key(key) in self._entries

    def get(self, key: Any, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default`` when there is none."""
        k = cache_key(key)
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

        Replaces an existing entry. Raises TypeError when no value is given for a non-Program key.
        """
        if value is _MISSING:
            if not isinstance(key, Program):
                raise TypeError("ProgramCache.insert needs a value unless the key is a Program")
            value = key
        k = cache_key(key)
        with self._lock:
            self._entries[k] = value
            self._entries.move_to_end(k)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        return value

    def get_or_build(self, key: Any, factory: Callable[[], Any]) -> Any:
        """The value under ``key``; on a miss, ``factory()`` builds it, it is inserted and returned.

        ``factory`` runs without the lock held; if two threads build the same key
        at once, the first value inserted is kept and returned to both. An
        exception from ``factory`` propagates and nothing is stored.
        """
        k = cache_key(key)
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
            if value is not _MISSING:
                self._entries.move_to_end(k)
                return value
        return self.insert(k, built)

    def values(self) -> list:
        """The stored values, least recently used first (a new list; the LRU order is unchanged)."""
        with self._lock:
            return list(self._entries.values())

    def remove(self, key: Any) -> bool:
        """Drop the entry of ``key``; returns whether there was one."""
        with self._lock:
            return self._entries.pop(cache_key(key), _MISSING) is not _MISSING

    def clear(self) -> None:
        """Drop every entry and reset the hit and miss counts."""
        with self._lock:
            self._entries.clear()
            self.hits = 0
            self.misses = 0

    def __repr__(self) -> str:
        return f"<ProgramCache {len(self)}/{self._capacity} entries, {self.hits} hits, {self.misses} misses>"
