"""The browser a page runs in, named from its user agent (informative: the backends' device descriptions).

Standard library only; ``this_browser`` reads ``navigator.userAgent`` through Pyodide's ``js`` module.
"""

from __future__ import annotations

__all__ = ["BROWSER_TOKENS", "browser_name", "this_browser"]

#: the user agent's product tokens that name a browser (the first of them in the agent wins)
BROWSER_TOKENS: tuple[str, ...] = ("Chrome", "HeadlessChrome", "Firefox", "Edg")


def browser_name(agent: str) -> str:
    """The browser and its major version (``"Chrome 140"``) from user agent ``agent``: the first token
    ``NAME/VERSION`` whose NAME is in BROWSER_TOKENS; else ``agent`` itself, or ``"unknown browser"``
    when it is empty. Never raises."""
    for token in agent.split():
        name, _, version = token.partition("/")
        if name in BROWSER_TOKENS:
            return f"{name} {version.split('.')[0]}"
    return agent or "unknown browser"


def this_browser() -> str:
    """browser_name of this page's ``navigator.userAgent`` (Pyodide only: raises ImportError elsewhere)."""
    import js
    return browser_name(str(getattr(js.navigator, "userAgent", "")))
