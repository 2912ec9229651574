"""A loopback stand-in for the Gemini API (generativelanguage ``v1beta``), scripted by
the prompt text.

The real Gemini CLI talks to it through ``GOOGLE_GEMINI_BASE_URL`` with an API key
(``GEMINI_API_KEY``, auth type ``gemini-api-key``). It answers what Gemini CLI 0.61.0
asks of the service (``docs/cli-versions.md``, ``/tmp/sb/gemini-facts.md``):

* ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``: the turns, as
  server-sent events (one ``data:`` line per chunk);
* ``POST /v1beta/models/{model}:generateContent``: the CLI's side requests (the
  model router's and the next-speaker check's JSON answers, the session title), a
  JSON object matching the response schema the request names;
* ``POST /v1beta/models/{model}:countTokens``: ``{"totalTokens": N}``;
* ``GET /v1beta/models[/{model}]``: a model list the CLI may read.

It records every request, so a test can assert which tools the CLI offered and what
it sent back. It never opens a socket beyond 127.0.0.1.

The script reads the newest user turn (its text parts; a ``functionResponse`` part
means a tool ran):

* ``TOOLTEST`` -> ``run_shell_command`` with ``TOOLTEST_COMMAND`` (asks the person in
  the default approval mode);
* ``SLOWTEST`` -> a text held back ``SLOW_S`` seconds (a turn a test can watch);
* ``LIMITTEST`` -> HTTP 429 ``RESOURCE_EXHAUSTED`` as the service states a quota;
* a line with the Switchboard control line -> the MCP tool ``transition_claim``
  (by the exact name the CLI offered, whatever prefix it gives MCP tools);
* ``CALLTOOL <name>`` -> the offered tool whose name is or ends with ``_<name>``
  (an MCP tool by its short name), no arguments;
* ``PUSH <title> :: <brief>`` -> the agent tool ``task_push`` with those arguments;
  ``PUSHTO <provider> <title> :: <brief>`` -> ``task_push`` on that provider;
  ``COMPLETE <summary> :: <next action>`` -> ``task_complete_return``;
* a function response -> ``STANDIN-DONE <name>``;
* anything else -> ``STANDIN-OK``.

Every answer carries ``usageMetadata`` numbers of its own (``USAGE``), so a test can
check that what Switchboard records is what the CLI wrote.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.model.control_line import CONTROL_TEMPLATE

MODEL_VERSION = "gemini-standin-1"
API_KEY = "standin-gemini-key"
TOOLTEST_WORD = "TOOLTEST"
TOOLTEST_COMMAND = "touch standin-tooltest.txt"
SHELL_TOOL = "run_shell_command"
SLOW_WORD = "SLOWTEST"
SLOW_S = 3.0
LIMIT_WORD = "LIMITTEST"
USAGE = {"promptTokenCount": 1234, "candidatesTokenCount": 56,
         "cachedContentTokenCount": 789, "thoughtsTokenCount": 7, "totalTokenCount": 1297}
_CALLTOOL = re.compile(r"\bCALLTOOL\s+(?P<name>[A-Za-z0-9_-]+)")
_WITH_ARGS = re.compile(r"^(?P<word>PUSH|COMPLETE)\s+(?P<first>.+?)\s+::\s+(?P<second>.+)$", re.M)
_PUSHTO = re.compile(r"^PUSHTO\s+(?P<provider>[a-z]+)\s+(?P<first>.+?)\s+::\s+(?P<second>.+)$",
                     re.M)
_TOOLS_WITH_ARGS = {"PUSH": ("task_push", "title", "brief"),
                    "COMPLETE": ("task_complete_return", "summary", "next_action")}
_PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^:/]+):(?P<method>\w+)$")


@dataclass(frozen=True)
class Recorded:
    """One request as the CLI sent it."""

    method: str
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]

    @property
    def api_method(self) -> str | None:
        """``streamGenerateContent``, ``generateContent``, ``countTokens`` or None."""
        found = _PATH.match(self.path.split("?", 1)[0])
        return found["method"] if found else None

    @property
    def model(self) -> str | None:
        found = _PATH.match(self.path.split("?", 1)[0])
        return found["model"] if found else None

    @property
    def tool_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for tool in (self.body or {}).get("tools") or []:
            for decl in tool.get("functionDeclarations") or []:
                names.append(str(decl.get("name")))
        return tuple(names)

    @property
    def is_turn(self) -> bool:
        return self.api_method == "streamGenerateContent"


@dataclass(frozen=True)
class Reply:
    """What the stand-in answers one turn: text, or a function call, or a refusal."""

    text: str = ""
    call: tuple[str, dict[str, Any]] | None = None
    delay_s: float = 0.0
    limited: bool = False


@dataclass
class Journal:
    """Every request, in order (thread-safe: the server answers on threads)."""

    items: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item: Recorded) -> None:
        with self.lock:
            self.items.append(item)

    def snapshot(self) -> list[Recorded]:
        with self.lock:
            return list(self.items)


def _last_user(body: dict[str, Any]) -> dict[str, Any]:
    for content in reversed(body.get("contents") or []):
        if content.get("role", "user") == "user":
            return dict(content)
    return {}


def _texts(content: dict[str, Any]) -> str:
    return "\n".join(str(part["text"]) for part in content.get("parts") or []
                     if isinstance(part, dict) and "text" in part)


def _function_response(content: dict[str, Any]) -> dict[str, Any] | None:
    for part in content.get("parts") or []:
        if isinstance(part, dict) and "functionResponse" in part:
            return dict(part["functionResponse"])
    return None


def _offered(offered: Sequence[str], suffix: str) -> str | None:
    for name in offered:
        if name == suffix or name.endswith("__" + suffix) or name.endswith("_" + suffix):
            return name
    return None


def script(body: dict[str, Any], offered: Sequence[str]) -> Reply:
    """The answer to one turn, from the newest user content."""
    last = _last_user(body)
    response = _function_response(last)
    if response is not None:
        return Reply(text=f"STANDIN-DONE {response.get('name')}")
    text = _texts(last)
    if LIMIT_WORD in text:
        return Reply(limited=True)
    if CONTROL_TEMPLATE in text:
        name = _offered(offered, "transition_claim")
        if name is None:
            return Reply(text="NO-TOOL: transition_claim not offered")
        return Reply(call=(name, {}))
    pushed = _PUSHTO.search(text)
    if pushed is not None:
        name = _offered(offered, "task_push")
        if name is None:
            return Reply(text="NO-TOOL: task_push not offered")
        return Reply(call=(name, {"title": pushed["first"].strip(),
                                  "brief": pushed["second"].strip(),
                                  "provider": pushed["provider"]}))
    given = _WITH_ARGS.search(text)
    if given is not None:
        tool, first, second = _TOOLS_WITH_ARGS[given["word"]]
        name = _offered(offered, tool)
        if name is None:
            return Reply(text=f"NO-TOOL: {tool} not offered")
        return Reply(call=(name, {first: given["first"].strip(),
                                  second: given["second"].strip()}))
    asked = _CALLTOOL.search(text)
    if asked is not None:
        name = _offered(offered, asked["name"])
        if name is None:
            return Reply(text=f"NO-TOOL: {asked['name']} not offered")
        return Reply(call=(name, {}))
    if TOOLTEST_WORD in text:
        return Reply(call=(SHELL_TOOL, {"command": TOOLTEST_COMMAND,
                                        "description": "Create a marker file"}))
    if SLOW_WORD in text:
        return Reply(text="STANDIN-SLOW done", delay_s=SLOW_S)
    return Reply(text="STANDIN-OK")


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def stream_chunks(reply: Reply) -> list[dict[str, Any]]:
    """The SSE chunks of one turn: the content, then a last chunk with the finish
    reason and the usage (the service sends usage with the last chunk)."""
    first: list[dict[str, Any]]
    if reply.call is not None:
        name, args = reply.call
        first = [{"functionCall": {"name": name, "args": args}}]
    else:
        first = [{"text": reply.text}]
    return [
        {"candidates": [_candidate(first, None)], "modelVersion": MODEL_VERSION},
        {"candidates": [_candidate([{"text": ""}], "STOP")], "usageMetadata": dict(USAGE),
         "modelVersion": MODEL_VERSION},
    ]


def _schema_value(schema: dict[str, Any]) -> Any:
    """A value matching a JSON schema, enough for the CLI's side requests: the first
    enum value, an object with every required property."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        values = list(schema["enum"])
        for preferred in ("user", "flash"):
            if preferred in values:
                return preferred
        return values[0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {key: _schema_value(props[key]) for key in props}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return "standin"


def side_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A ``generateContent`` answer: JSON per the request's schema, else a short text."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if isinstance(schema, dict):
        text = json.dumps(_schema_value(schema))
    elif config.get("responseMimeType") == "application/json":
        text = "{}"
    else:
        text = "Standin title"
    return {"candidates": [_candidate([{"text": text}], "STOP")],
            "usageMetadata": dict(USAGE), "modelVersion": MODEL_VERSION}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def _read_body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            parsed = json.loads(raw)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None

    def _record(self, body: dict[str, Any] | None) -> Recorded:
        item = Recorded(self.command, self.path, body,
                        {k.lower(): v for k, v in self.headers.items()})
        self.server.journal.add(item)
        return item

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self, item: Recorded) -> bool:
        key = item.headers.get("x-goog-api-key") or ""
        if key == self.server.api_key:
            return True
        self._json(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                   "message": "API key not valid. Please pass a valid API "
                                              "key."}})
        return False

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        item = self._record(None)
        if not self._authorized(item):
            return
        self._json(200, {"models": [{"name": f"models/{MODEL_VERSION}",
                                     "supportedGenerationMethods": ["generateContent"]}]})

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = self._read_body()
        item = self._record(body)
        if not self._authorized(item):
            return
        method = item.api_method
        if body is None or method is None:
            self._json(404, {"error": {"code": 404, "status": "NOT_FOUND",
                                       "message": f"no such method: {self.path}"}})
            return
        if method == "countTokens":
            self._json(200, {"totalTokens": 42})
        elif method == "generateContent":
            self._json(200, side_answer(body))
        elif method == "streamGenerateContent":
            self._stream(script(body, item.tool_names))
        else:
            self._json(404, {"error": {"code": 404, "status": "NOT_FOUND",
                                       "message": f"no such method: {method}"}})

    def _stream(self, reply: Reply) -> None:
        if reply.limited:
            self._json(429, {"error": {
                "code": 429, "status": "RESOURCE_EXHAUSTED",
                "message": "Quota exceeded for metric: generate_content_free_tier_requests",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                             "retryDelay": "8s"}]}})
            return
        if reply.delay_s:
            time.sleep(reply.delay_s)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in stream_chunks(reply):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
            self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, journal: Journal, api_key: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.journal = journal
        self.api_key = api_key


class GeminiStandin:
    """The stand-in as a context manager: ``url`` is the base URL the CLI is given."""

    def __init__(self, *, api_key: str = API_KEY) -> None:
        self.journal = Journal()
        self._server = _Server(self.journal, api_key)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> GeminiStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def turns(self) -> list[Recorded]:
        return [item for item in self.journal.snapshot() if item.is_turn]
