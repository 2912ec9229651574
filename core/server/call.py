"""One agent-tool call, in its own process: ``python -m core.server.call``.

The server starts this per ``tools/call`` with exactly the calling launch's tool
environment (what its token was registered with), so the capability, generation and
pane checks are the same code as over stdio (``core.agent.mcp_server.handle``), and a
call that hangs or crashes never takes another launch's tools (the server kills it
past its time limit). Reads one JSON-RPC message on stdin, writes one answer on stdout.
"""

from __future__ import annotations

import json
import sys

MAX_MESSAGE_BYTES = 4 * 1024 * 1024


def main() -> int:
    from core.agent.mcp_server import PARSE_ERROR, _error, handle

    data = sys.stdin.buffer.read(MAX_MESSAGE_BYTES + 1)
    try:
        if len(data) > MAX_MESSAGE_BYTES:
            raise ValueError("too large")
        reply = handle(json.loads(data))
    except (ValueError, RecursionError):
        reply = _error(None, PARSE_ERROR, "parse error")
    sys.stdout.buffer.write(json.dumps(reply, separators=(",", ":")).encode("utf-8"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
