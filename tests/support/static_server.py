"""A static HTTP server on 127.0.0.1, in a thread of the test process: the files of a directory
(a source registry as a web server would serve it), and canned answers for chosen paths
(redirects, a releases API, a body sent without its length). It records every request."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class StaticServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        # path (with its query) -> (status, headers, body); a body is sent without a length.
        self.routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
        # (path, headers) of every request, in order.
        self.requests: list[tuple[str, dict[str, str]]] = []
        handler = partial(_Handler, self, directory=str(root))
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> StaticServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def headers_of(self, prefix: str) -> list[dict[str, str]]:
        """The headers of each request whose path starts with `prefix`."""
        return [headers for path, headers in self.requests if path.startswith(prefix)]


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, server_state: StaticServer, *args: Any, **kwargs: Any) -> None:
        self.state = server_state
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        self.state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        route = self.state.routes.get(self.path)
        if route is None:
            super().do_GET()
            return
        status, headers, body = route
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        # No Content-Length: HTTP/1.0 ends the body by closing the connection.
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on `requests` instead."""
