"""An HTTP server on 127.0.0.1 (a free port), served from a daemon thread: the base of the scripted API
servers that tests and demos point real clients at."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LocalServer:
    """Serves ``handler`` on 127.0.0.1; use as a context manager (``start`` / ``stop`` otherwise)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name=self._name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
