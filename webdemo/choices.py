"""The backend picker: which backends the page offers, and whether each can start in this build.

The page offers BROWSER_CHOICES: ``auto`` and the two backends that run in a
browser. Availability comes from the registry's discovery (each backend is
probed once), so a backend whose browser runner or driver is missing is shown
as "not available in this build" with the registry's reason, and one that
starts is offered as soon as it exists: nothing here names a runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from atlas_web.registry import AUTO_ORDER, BackendStatus, discover_backends

__all__ = ["AUTO", "BROWSER_CHOICES", "NOT_AVAILABLE", "BackendChoice", "backend_choices", "resolve_choice"]

AUTO = "auto"
#: what the page's picker offers, in order
BROWSER_CHOICES: tuple[str, ...] = (AUTO, "wasm", "webgpu")
#: the words every unavailable choice carries (the page and its tests look for them)
NOT_AVAILABLE = "not available in this build"


@dataclass(frozen=True)
class BackendChoice:
    """One entry of the picker: its name, whether it can run, the label shown, and why not."""

    name: str
    available: bool
    label: str
    reason: str = ""
    devices: tuple[str, ...] = ()

    @property
    def explanation(self) -> str:
        """One line for the page: what runs the backend, or why it is not available."""
        if self.available:
            return f"{self.name}: available ({', '.join(self.devices) or 'ready'})"
        return f"{self.name}: {NOT_AVAILABLE}: {self.reason}"


def _concrete(choices: Sequence[str]) -> list[str]:
    """The backend names among ``choices`` (not AUTO), in AUTO_ORDER first, as auto tries them."""
    names = [c for c in choices if c != AUTO]
    return sorted(names, key=lambda n: (AUTO_ORDER.index(n) if n in AUTO_ORDER else len(AUTO_ORDER), names.index(n)))


def _auto_order(statuses: dict[str, BackendStatus], names: list[str]) -> list[str]:
    """``names`` as init_backend(AUTO) tries them: a software GPU (SwiftShader, lavapipe) last."""
    return sorted(names, key=lambda n: n in statuses and statuses[n].software_gpu)


def backend_choices(choices: Sequence[str] = BROWSER_CHOICES,
                    statuses: Sequence[BackendStatus] | None = None) -> list[BackendChoice]:
    """The picker's entries for ``choices`` (default BROWSER_CHOICES), from ``statuses`` (default: discovery).

    A name the registry does not know is unavailable with that as the reason;
    AUTO is available when any of the other choices is, and then says which it
    picks (as init_backend(AUTO) would: a software GPU only when nothing else
    can run). Never raises for an unavailable backend.
    """
    by_name = {s.name: s for s in (statuses if statuses is not None else discover_backends())}
    entries: dict[str, BackendChoice] = {}
    for name in _concrete(choices):
        status = by_name.get(name, BackendStatus(name, False, f"no backend {name!r} is registered"))
        label = name if status.available else f"{name} ({NOT_AVAILABLE})"
        entries[name] = BackendChoice(name, status.available, label, status.reason, status.devices)
    if AUTO in choices:
        picked = next((entries[n] for n in _auto_order(by_name, _concrete(choices)) if entries[n].available), None)
        if picked is not None:
            entries[AUTO] = BackendChoice(AUTO, True, f"auto ({picked.name})", "", (picked.name,))
        else:
            reasons = "; ".join(f"{c.name}: {c.reason}" for c in entries.values()) or "no backend is offered"
            entries[AUTO] = BackendChoice(AUTO, False, f"auto ({NOT_AVAILABLE})", f"no backend can start ({reasons})")
    return [entries[name] for name in choices]


def resolve_choice(name: str, entries: Sequence[BackendChoice]) -> BackendChoice:
    """The concrete backend that choice ``name`` runs on: AUTO becomes the first available backend.

    Returns the (unavailable) entry itself when nothing can run it, so the
    page can show the reason. Raises KeyError naming the choices for an
    unknown ``name``.
    """
    by_name = {entry.name: entry for entry in entries}
    try:
        entry = by_name[name]
    except KeyError:
        raise KeyError(f"unknown backend choice {name!r} (choices: {', '.join(by_name)})") from None
    if name == AUTO and entry.available:
        return by_name[entry.devices[0]]
    return entry
