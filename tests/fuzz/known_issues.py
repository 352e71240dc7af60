"""The ONE table of known issues the campaign meets before their fixes land (reported by every run).

Each entry: the issue, what it is, and a predicate over (backend, case, problems) saying whether a mismatch
is that issue. Remove an entry when its fix is on main (the slice then fails if the bug comes back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["KnownIssue", "KNOWN_ISSUES", "known_issue"]


@dataclass(frozen=True)
class KnownIssue:
    issue: str
    what: str
    matches: Callable[[object, object, list[str]], bool]


KNOWN_ISSUES: tuple[KnownIssue, ...] = ()


def known_issue(backend, case, problems: list[str]) -> str | None:
    """The first known issue that explains ``problems``, as "issue: what", or None."""
    for entry in KNOWN_ISSUES:
        if entry.matches(backend, case, problems):
            return f"{entry.issue}: {entry.what}"
    return None
