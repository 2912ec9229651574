"""A tiny MCP server for the Gemini real-CLI test: two tools, each call logged.

Over stdio (run as a script) or over Streamable HTTP on loopback (``HttpToolServer``,
JSON answers; it keeps the ``Authorization`` header of every request).

``python gemini_mcp_server.py LOG VAR``: newline-delimited JSON-RPC on stdin/stdout
(MCP's stdio transport). ``tools/call`` appends ``<tool>\\t<value of $VAR>`` to LOG, so
a test sees which tool ran and what the server's environment held (the value the
CLI expanded from ``"$VAR"`` in the per-launch settings). Stdlib only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = ("transition_claim", "task_push")


def _answer(request: dict[str, Any], log: str, var: str) -> dict[str, Any] | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        return None  # a notification (notifications/initialized, ...)
    if method == "initialize":
        version = (request.get("params") or {}).get("protocolVersion", "2025-06-18")
        result: dict[str, Any] = {"protocolVersion": version,
                                  "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "standin-tools", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": name, "description": f"Stand-in {name}",
                             "inputSchema": {"type": "object", "properties": {}}}
                            for name in TOOLS]}
    elif method == "tools/call":
        name = str((request.get("params") or {}).get("name"))
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{name}\t{os.environ.get(var, '')}\n")
        result = {"content": [{"type": "text", "text": f"ran {name}"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident,
                "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


class _HttpHandler(BaseHTTPRequestHandler):
    server: _HttpServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def _send(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - no server-initiated stream
        self.server.auth.append(self.headers.get("Authorization", ""))
        self._send(405)

    def do_DELETE(self) -> None:  # noqa: N802
        self._send(200)

    def do_POST(self) -> None:  # noqa: N802
        self.server.auth.append(self.headers.get("Authorization", ""))
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = _answer(json.loads(raw), self.server.log, "")
        if reply is None:
            self._send(202)
        else:
            self._send(200, json.dumps(reply).encode())


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log: str) -> None:
        super().__init__(("127.0.0.1", 0), _HttpHandler)
        self.log = log
        self.auth: list[str] = []


class HttpToolServer:
    """The same tools over Streamable HTTP at ``url``; ``auth`` is every request's
    ``Authorization`` header, in order."""

    def __init__(self, log: str) -> None:
        self._server = _HttpServer(log)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/mcp"

    @property
    def auth(self) -> list[str]:
        return list(self._server.auth)

    def __enter__(self) -> HttpToolServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def main(argv: list[str]) -> int:
    log, var = argv
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = _answer(json.loads(line), log, var)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
