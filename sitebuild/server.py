"""The static server of the built site: http.server with the headers the page needs.

- MIME types: ``application/wasm`` (streaming compilation refuses anything
  else), ``text/javascript`` for ES modules (``.mjs`` is unknown to older
  mimetypes tables), ``application/json``.
- Cross-origin isolation: ``Cross-Origin-Opener-Policy: same-origin`` and
  ``Cross-Origin-Embedder-Policy: require-corp`` (SharedArrayBuffer and
  precise timers), plus ``Cross-Origin-Resource-Policy: same-origin`` on every
  response so the isolated page may load it.
- ``Cache-Control: no-cache``: the browser keeps what it fetched and
  revalidates (a 304 when the file did not change), so a rebuilt site is
  never stale and a warm load moves no file again.

Binds 127.0.0.1 by default; port 0 picks a free port.
"""

from __future__ import annotations

import functools
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

__all__ = ["MIME_TYPES", "ISOLATION_HEADERS", "SiteRequestHandler", "SiteServer", "RunningServer", "start_server",
           "serve_forever"]

#: extension -> Content-Type, over the mimetypes defaults
MIME_TYPES: dict[str, str] = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".map": "application/json",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".py": "text/x-python; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}

#: headers every response carries
ISOLATION_HEADERS: dict[str, str] = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


class SiteRequestHandler(SimpleHTTPRequestHandler):
    """Serves files of one directory with MIME_TYPES and ISOLATION_HEADERS; logs only when ``verbose``."""

    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}
    verbose = False

    def end_headers(self) -> None:
        for name, value in ISOLATION_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's signature
        if self.verbose:
            super().log_message(format, *args)


class SiteServer(ThreadingHTTPServer):
    """A threading HTTP server of ``directory`` on ``host``:``port`` (0: a free port).

    Raises OSError when the address cannot be bound, FileNotFoundError when
    ``directory`` does not exist.
    """

    daemon_threads = True

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> None:
        directory = Path(directory)
        if not directory.is_dir():
            raise FileNotFoundError(f"no site to serve at {directory}: build it first (python3 build.py site)")
        handler_class = type("BoundSiteRequestHandler", (SiteRequestHandler,), {"verbose": verbose})
        super().__init__((host, port), functools.partial(handler_class, directory=str(directory)))
        self.directory = directory

    @property
    def url(self) -> str:
        """The base URL, ending in ``/``."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


class RunningServer:
    """A SiteServer serving in a daemon thread; a context manager that stops it on exit."""

    def __init__(self, server: SiteServer) -> None:
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, name="atlas-web site server", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join()
        self.server.server_close()

    def __enter__(self) -> "RunningServer":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def start_server(directory: Path, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> RunningServer:
    """Serve ``directory`` in a background thread; raises as SiteServer."""
    return RunningServer(SiteServer(directory, host, port, verbose=verbose))


def serve_forever(directory: Path, host: str = "127.0.0.1", port: int = 8000, *,
                  say: Callable[[str], None] = print) -> None:
    """Serve ``directory`` in the foreground until Ctrl-C, logging each request; raises as SiteServer."""
    with SiteServer(directory, host, port, verbose=True) as server:
        say(f"serving {directory} at {server.url} (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            say("stopped")
        finally:
            sys.stderr.flush()
