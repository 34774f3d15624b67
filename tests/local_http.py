"""A real HTTP server on a loopback port for one test or module: a stand-in for an outside
service (an OpenAI-compatible chat model) that the code under test calls over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JSONHandler(BaseHTTPRequestHandler):
    """A stand-in's request handler: reads a JSON body, answers JSON, logs nothing."""

    def json_body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["content-length"])))

    def answer(self, data: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, format: str, *args: Any) -> None:  # pytest shows what matters
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], path: str = "/v1") -> Iterator[str]:
    """Serve ``handler`` on a free loopback port until the block ends; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()
