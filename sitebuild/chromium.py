"""The headless Chromium the build (sitebuild.snapshot), the browser tests and the benchmarks drive.

Debian's Chromium (``/usr/bin/chromium``), launched through Playwright, which
never downloads a browser here. Standard library only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "launch", "launch_persistent"]

CHROMIUM = Path("/usr/bin/chromium")
#: a headless Chromium that stays off the network (the machine has none: without these flags it keeps
#: trying) and offers WebGPU on SwiftShader (navigator.gpu needs a secure context: 127.0.0.1 is one)
CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-quic", "--disable-default-apps", "--disable-breakpad",
    "--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader",
)


def launch(playwright: Any, **options: Any) -> Any:
    """A headless CHROMIUM with CHROMIUM_ARGS and a throwaway profile, launched through ``playwright`` (a
    sync_playwright() object): Playwright's Browser, to close when done. ``options`` go to launch as they are.
    Raises Playwright's Error when Chromium does not start (CHROMIUM missing included)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS),
                                      **options)


def launch_persistent(playwright: Any, profile: Path | str, **options: Any) -> Any:
    """A headless CHROMIUM with CHROMIUM_ARGS and its profile in ``profile`` (a directory, made if missing),
    launched through ``playwright`` (a sync_playwright() object): Playwright's BrowserContext, to close when
    done. ``options`` go to launch_persistent_context as they are (e.g. ``viewport``). Raises Playwright's
    Error when Chromium does not start (CHROMIUM missing included)."""
    return playwright.chromium.launch_persistent_context(
        str(profile), executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS), **options)
