"""The WGSL helper library: named WGSL functions (and constants) that generated code calls.

A helper is registered with ``@helper("name", deps=(...))`` around a function returning its
WGSL source; a *family* of helpers parameterized by an int (the limb count of the wide
integers: ``wide_add_4``) with ``@helper_family("wide_add")``, whose function takes the
parameter. ``HelperSet.require(name, param=None)`` records a helper and its dependencies and
returns the WGSL function name; ``render()`` emits every required helper once, dependencies
first. Sources are plain strings: nothing here knows about WGSL syntax.

A dependency is a name (``"u64_add"``), a ``(name, param)`` pair, or ``(name, "*")`` for "the
same parameter as mine".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["helper", "helper_family", "HelperSet", "HELPERS", "FAMILY_HELPERS", "helper_name"]


@dataclass(frozen=True)
class _Helper:
    name: str
    render: Callable[..., str]
    deps: tuple
    family: bool


#: name -> helper of every fixed helper
HELPERS: dict[str, _Helper] = {}
#: prefix -> helper family (instantiated per int parameter)
FAMILY_HELPERS: dict[str, _Helper] = {}


def helper(name: str, deps: tuple = ()):
    """Register ``fn() -> str`` as the WGSL source of helper ``name`` (its function is ``name``)."""
    def register(fn: Callable[[], str]) -> Callable[[], str]:
        if name in HELPERS:
            raise ValueError(f"WGSL helper {name!r} is defined twice")
        HELPERS[name] = _Helper(name, fn, tuple(deps), False)
        return fn
    return register


def helper_family(prefix: str, deps: tuple = ()):
    """Register ``fn(param: int) -> str`` as the source of helpers ``{prefix}_{param}``."""
    def register(fn: Callable[[int], str]) -> Callable[[int], str]:
        if prefix in FAMILY_HELPERS:
            raise ValueError(f"WGSL helper family {prefix!r} is defined twice")
        FAMILY_HELPERS[prefix] = _Helper(prefix, fn, tuple(deps), True)
        return fn
    return register


def helper_name(name: str, param: int | None = None) -> str:
    """The WGSL function name of helper ``name`` (with ``param`` for a family)."""
    return name if param is None else f"{name}_{param}"


class HelperSet:
    """The helpers one shader needs, in dependency order."""

    def __init__(self) -> None:
        self._order: list[tuple[str, int | None]] = []
        self._seen: set[tuple[str, int | None]] = set()

    def require(self, name: str, param: int | None = None) -> str:
        """Record helper ``name`` (of a family when ``param`` is given) and its dependencies;
        return its WGSL name. Raises KeyError for an unknown helper."""
        key = (name, param)
        if key not in self._seen:
            definition = FAMILY_HELPERS[name] if param is not None else HELPERS[name]
            for dep in definition.deps:
                if isinstance(dep, tuple):
                    dep_name, dep_param = dep
                    self.require(dep_name, param if dep_param == "*" else dep_param)
                else:
                    self.require(dep)
            self._seen.add(key)
            self._order.append(key)
        return helper_name(name, param)

    def __contains__(self, name: str) -> bool:
        return any(n == name for n, _ in self._order)

    def render(self) -> str:
        """The WGSL source of every required helper, dependencies before their users."""
        parts = []
        for name, param in self._order:
            if param is None:
                parts.append(HELPERS[name].render().strip())
            else:
                parts.append(FAMILY_HELPERS[name].render(param).strip())
        return "\n\n".join(parts)
