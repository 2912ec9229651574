"""A tiny stdio MCP server for the Gemini real-CLI test: two tools, each call logged.

``python gemini_mcp_server.py LOG VAR``: newline-delimited JSON-RPC on stdin/stdout
(MCP's stdio transport). ``tools/call`` appends ``<tool>\\t<value of $VAR>`` to LOG, so
a test sees which tool ran and what the server's environment held (the value the
CLI expanded from ``"$VAR"`` in the per-launch settings). Stdlib only.
"""

from __future__ import annotations

import json
import os
import sys
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
