"""The headless Chromium the build (sitebuild.snapshot), the browser tests and the benchmarks drive.

Debian's Chromium (``/usr/bin/chromium``), launched through Playwright, which
never downloads a browser here. Standard library only.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = Path("/usr/bin/chromium")
#: a headless Chromium that stays off the network (the machine has none: without these flags it keeps
#: trying) and offers WebGPU on SwiftShader (navigator.gpu needs a secure context: 127.0.0.1 is one)
CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-quic", "--disable-default-apps", "--disable-breakpad",
    "--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader",
)
