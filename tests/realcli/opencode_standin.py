"""The Anthropic Messages API as OpenCode uses it, on loopback, scripted by the prompt.

OpenCode 1.18.33 reaches Anthropic through ``@ai-sdk/anthropic`` at the ``baseURL`` of
its per-launch config (``provider.anthropic.options.baseURL``): ``POST <base>/messages``,
always streamed. The wire format is the one :mod:`tests.realcli.anthropic_standin`
already speaks (its events, usage numbers and request journal are reused); what
differs is the script, because OpenCode offers its own tools under lowercase names
(``bash``, ``read``, ``edit`` ...), not Claude Code's ``Bash``:

* ``OCTOOL`` -> the ``bash`` tool running ``OCTOOL_COMMAND`` (with ``"permission":
  {"bash": "ask"}`` in the launch config this is the permission prompt a test watches);
* ``OCMCP`` or the fixed claim line -> the agent tool ``switchboard_transition_claim``
  (MCP, no arguments);
* ``PUSH <title> :: <brief>`` -> ``switchboard_task_push`` with those arguments;
  ``COMPLETE <summary> :: <next action>`` -> ``switchboard_task_complete_return``;
* ``OCSLOW`` -> a text answer held back for ``SLOW_S`` seconds (a turn that stays busy);
* a tool result -> ``STANDIN-DONE <tool>``;
* no tools offered (OpenCode's title request to its small model) -> ``STANDIN-SIDE``;
* anything else -> ``STANDIN-OK: <the typed text>``.

It never opens a socket beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.realcli.anthropic_standin import (
    Journal,
    Recorded,
    Reply,
    ToolCall,
    sse_events,
)

OCTOOL_WORD = "OCTOOL"
OCTOOL_COMMAND = "touch opencode-tooltest.txt"
OCSLOW_WORD = "OCSLOW"
CLAIM_LINE = "Call transition_claim()"
"""The start of Switchboard's fixed claim line (``core.model.control_line``)."""
_WITH_ARGS = re.compile(r"^(?P<word>PUSH|COMPLETE)\s+(?P<first>.+?)\s+::\s+(?P<second>.+)$",
                        re.M)
_TOOLS_WITH_ARGS = {"PUSH": ("switchboard_task_push", "title", "brief"),
                    "COMPLETE": ("switchboard_task_complete_return", "summary", "next_action")}
OCMCP_WORD = "OCMCP"
OCMCP_TOOL = "switchboard_transition_claim"
"""The agent tool ``OCMCP`` calls, by the name OpenCode offers it (``<server>_<tool>``)."""
SLOW_S = 4.0


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def script(body: dict[str, Any]) -> Reply:
    """The answer to one Messages request of OpenCode (pure)."""
    offered = [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)
                and m.get("role") in ("user", "assistant")]
    if not offered:
        return Reply("STANDIN-SIDE")
    if not messages or messages[-1].get("role") != "user":
        return Reply("STANDIN-OK")
    blocks = _blocks(messages[-1].get("content"))
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        names = {str(b.get("id")): str(b.get("name")) for m in messages
                 if m.get("role") == "assistant" for b in _blocks(m.get("content"))
                 if b.get("type") == "tool_use"}
        return Reply(f"STANDIN-DONE {names.get(str(results[-1].get('tool_use_id')), '?')}")
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    if OCTOOL_WORD in text:
        if "bash" not in offered:
            return Reply(f"NO-TOOL: bash was not offered ({len(offered)} tools offered)")
        return Reply("Calling bash.", ToolCall("bash", {"command": OCTOOL_COMMAND,
                                                        "description": "Create a marker file"}))
    given = _WITH_ARGS.search(text)
    if given is not None:
        tool, first, second = _TOOLS_WITH_ARGS[given["word"]]
        if tool not in offered:
            return Reply(f"NO-TOOL: {tool} was not offered")
        return Reply(f"Calling {tool}.", ToolCall(tool, {first: given["first"].strip(),
                                                          second: given["second"].strip()}))
    if OCMCP_WORD in text or CLAIM_LINE in text:
        if OCMCP_TOOL not in offered:
            return Reply(f"NO-TOOL: {OCMCP_TOOL} was not offered ({len(offered)} offered)")
        return Reply("Calling the agent tool.", ToolCall(OCMCP_TOOL, {}))
    if OCSLOW_WORD in text:
        return Reply("STANDIN-SLOW done", delay_s=SLOW_S)
    return Reply(f"STANDIN-OK: {text.strip()[:40]}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        return  # the journal is the log

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self.server.journal.add(Recorded("GET", self.path, dict(self.headers.items()), None))
        self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                    "message": "stand-in: no such path"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            body = None
        item = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                        body if isinstance(body, dict) else None)
        self.server.journal.add(item)
        if not self.path.split("?", 1)[0].endswith("/v1/messages") or item.body is None:
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": f"stand-in: {self.path}"}})
            return
        if self.headers.get("x-api-key") != self.server.api_key:
            self._json(401, {"type": "error", "error": {"type": "authentication_error",
                                                        "message": "invalid x-api-key"}})
            return
        reply = script(item.body)
        self.server.journal.answered(item, reply)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        model = str(item.body.get("model") or "claude-sonnet-4-5")
        message_id, tool_id = f"msg_{uuid.uuid4().hex[:24]}", f"toolu_{uuid.uuid4().hex[:24]}"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event, data in sse_events(reply, message_id, tool_id, model):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    journal: Journal
    api_key: str


class OpencodeStandin:
    """``with OpencodeStandin() as api:`` then ``api.provider_config()`` in the launch config."""

    MODEL = "anthropic/claude-sonnet-4-5"

    def __init__(self, api_key: str = "sk-opencode-standin") -> None:
        self.journal = Journal()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.journal = self.journal
        self._server.api_key = api_key
        self.api_key = api_key
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="opencode-standin", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def provider_config(self) -> dict[str, Any]:
        """The part of an OpenCode config that sends its Anthropic provider here."""
        return {"model": self.MODEL,
                "provider": {"anthropic": {"options": {"baseURL": self.url + "/v1",
                                                       "apiKey": self.api_key}}}}

    def __enter__(self) -> OpencodeStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
