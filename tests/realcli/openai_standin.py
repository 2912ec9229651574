"""A loopback stand-in for the OpenAI Responses API, scripted by the prompt text.

The real Codex CLI talks to it exactly as to the service (``POST /v1/responses``,
answered with a server-sent event stream), so a test drives the real CLI through
tool calls without any network. What the model "does" is decided by the latest
user prompt of the request:

- ``PUSH title :: brief`` -> a call of the offered tool ending in ``task_push``;
- ``COMPLETE summary :: next action`` -> a call of ``task_complete_return``;
- the control line (``Call transition_claim() ...``) -> a call of
  ``transition_claim``, and after its output a message naming what was claimed
  (a brief or a handoff: the returned instructions say to act on it);
- ``TOOLTEST`` -> a shell command that asks for the person's approval;
- ``MSG recipient :: text`` -> a call of ``message_send``;
- a typed broker notification (``[switchboard] message N from ...: call
  message_poll() ...``) -> ``message_poll``, then ``message_ack`` of message N
  once the poll listed it, then a message ``Acked N``;
- ``SPAWNTEST`` -> Codex's own ``spawn_agent`` (namespace ``multi_agent_v1`` in 0.171.0,
  given back as offered: without it Codex answers "unsupported call" and spawns nothing),
  whose task is ``SUBAGENT_TASK``; the subagent's own request is answered with a text;
- anything else -> one text message that ends the turn.

A prompt containing ``SLOW`` is answered after ``SLOW_S`` seconds, so a test
can see the session working before the turn ends. A prompt containing
``LIMITTEST`` is refused with HTTP 429 ``usage_limit_reached`` (the plan's usage
limit, as the service says it), which Codex does not retry.

Once the call of a turn has its output, the turn ends with a message. Every
request is recorded (path, bearer token, body) so tests can assert which tool
names Codex offered and which key it authenticated with.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTROL_PREFIX = "Call transition_claim()"
PUSH = re.compile(r"^PUSH\s+(?P<a>.+?)\s*::\s*(?P<b>.+?)\s*$", re.M)
COMPLETE = re.compile(r"^COMPLETE\s+(?P<a>.+?)\s*::\s*(?P<b>.+?)\s*$", re.M)
MSG = re.compile(r"^MSG\s+(?P<a>.+?)\s*::\s*(?P<b>.+?)\s*$", re.M)
NOTICE = re.compile(r"\[switchboard\] message (?P<id>\d+) from .*message_poll\(\)")
TOOLTEST = "TOOLTEST"
TOOLTEST_FILE = "standin-tooltest.txt"
TOOLTEST_COMMAND = f"touch {TOOLTEST_FILE}"
SLOW = "SLOW"
SLOW_S = 3.0
LIMIT_WORD = "LIMITTEST"
SPAWN_WORD = "SPAWNTEST"
SUBAGENT_TASK = "You are a helper: say hello, then stop."
LIMIT_ERROR = {"error": {"type": "usage_limit_reached",
                         "message": "The usage limit has been reached", "plan_type": "plus",
                         "resets_in_seconds": 120}}
USAGE = {"input_tokens": 2345, "input_tokens_details": {"cached_tokens": 600},
         "output_tokens": 78, "output_tokens_details": {"reasoning_tokens": 12},
         "total_tokens": 2423}
"""Every response's usage: distinct numbers, so a test can check they are recorded exactly."""


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    bearer: str | None
    body: dict[str, Any] | None

    def tool_names(self) -> list[str]:
        """Every function name offered in ``tools`` (namespaced tools flattened)."""
        return [name for name, _ in _functions(self.body or {})]


@dataclass
class StandinState:
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: int = 0

    def next_id(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter


def _functions(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(name, namespace) for each callable function the request offers."""
    found: list[tuple[str, str | None]] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name"):
                    found.append((str(inner["name"]), str(tool.get("name"))))
        elif tool.get("name"):
            found.append((str(tool["name"]), None))
    return found


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _turn(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The latest real user prompt and the items that followed it."""
    items = [item for item in body.get("input") or [] if isinstance(item, dict)]
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("type", "message") == "message" and item.get("role") == "user":
            text = _text_of(item.get("content"))
            if text.lstrip().startswith("<"):  # environment context, AGENTS.md, etc.
                continue
            return text, items[index + 1:]
    return "", items


def _output_json(item: dict[str, Any]) -> dict[str, Any]:
    output = item.get("output")
    text = _text_of(output) if not isinstance(output, str) else output
    for candidate in (text, *re.findall(r"\{.*\}", text or "", re.S)):
        try:
            document = json.loads(candidate)
        except (TypeError, ValueError):
            continue
        if isinstance(document, dict):
            return document
    return {}


class Script:
    """Decide the next model output for one request."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.prompt, self.after = _turn(body)
        self.outputs = [i for i in self.after if str(i.get("type", "")).endswith("_output")]

    def tool(self, suffix: str) -> tuple[str, str | None]:
        for name, namespace in _functions(self.body):
            if name == suffix or name.endswith("__" + suffix) or name.endswith("." + suffix):
                return name, namespace
        offered = ", ".join(name for name, _ in _functions(self.body))
        raise LookupError(f"no tool ending in {suffix!r} was offered (offered: {offered})")

    def shell_call(self) -> tuple[str, str | None, dict[str, Any]]:
        """A command outside the workspace sandbox, asking for approval to run it."""
        names = {name for name, _ in _functions(self.body)}
        command = TOOLTEST_COMMAND
        reason = "TOOLTEST needs to write a file"
        if "exec_command" in names:
            return "exec_command", None, {"cmd": command, "sandbox_permissions":
                                          "require_escalated", "justification": reason}
        name = "shell_command" if "shell_command" in names else "shell"
        if name == "shell_command":
            return name, None, {"command": command, "sandbox_permissions": "require_escalated",
                                "justification": reason}
        return name, None, {"command": ["bash", "-lc", command],
                            "sandbox_permissions": "require_escalated",
                            "justification": reason}

    def decide(self) -> list[dict[str, Any]]:
        """The output items for this request."""
        prompt = self.prompt
        if CONTROL_PREFIX in prompt:
            if not self.outputs:
                return [self._call("transition_claim", {})]
            claimed = _output_json(self.outputs[-1])
            kind = claimed.get("kind", "nothing")
            title = claimed.get("title", "")
            return [_message(f"Claimed {kind}: {title}. Following the instructions.")]
        notice = NOTICE.search(prompt)
        if notice:  # before the patterns below: a sender's title is free text
            return [self._read_message(int(notice["id"]))]
        if match := MSG.search(prompt):
            if not self.outputs:
                return [self._call("message_send", {"to": match["a"], "text": match["b"]})]
            sent = _output_json(self.outputs[-1])
            return [_message(f"Sent {sent.get('message_id')}: {sent.get('delivery')}")]
        for pattern, tool in ((PUSH, "task_push"), (COMPLETE, "task_complete_return")):
            match = pattern.search(prompt)
            if match:
                if not self.outputs:
                    args = ({"title": match["a"], "brief": match["b"]} if tool == "task_push"
                            else {"summary": match["a"], "next_action": match["b"]})
                    return [self._call(tool, args)]
                return [_message(f"Done: {tool} answered. Ending my turn.")]
        if SUBAGENT_TASK in prompt:
            return [_message("Hello from the helper.")]
        if SPAWN_WORD in prompt:
            if not self.outputs:
                return [self._call("spawn_agent", {"message": SUBAGENT_TASK})]
            return [_message("SPAWNTEST: the helper runs.")]
        if TOOLTEST in prompt:
            if not self.outputs:
                name, namespace, args = self.shell_call()
                return [_function_call(name, namespace, args)]
            return [_message("TOOLTEST finished.")]
        return [_message(f"Stand-in reply to: {prompt.strip()[:80]}")]

    def _read_message(self, announced: int) -> dict[str, Any]:
        """Poll; ACK the announced message once the poll listed it; then say so."""
        if not self.outputs:
            return self._call("message_poll", {})
        if len(self.outputs) == 1:
            polled = _output_json(self.outputs[0]).get("messages") or []
            listed = [m.get("message_id") for m in polled if isinstance(m, dict)]
            if announced not in listed:
                return _message(f"Poll mismatch: announced {announced}, polled {listed}")
            return self._call("message_ack", {"id": announced})
        return _message(f"Acked {_output_json(self.outputs[-1]).get('message_id')}")

    def _call(self, suffix: str, args: dict[str, Any]) -> dict[str, Any]:
        name, namespace = self.tool(suffix)
        return _function_call(name, namespace, args)


_CALLS = iter(range(1, 1 << 30))


def _function_call(name: str, namespace: str | None, args: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "id": f"fc_{next(_CALLS)}",
                            "call_id": f"call_{next(_CALLS)}", "name": name,
                            "arguments": json.dumps(args), "status": "completed"}
    if namespace:
        item["namespace"] = namespace
    return item


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "id": f"msg_{next(_CALLS)}",
            "status": "completed", "content": [{"type": "output_text", "text": text,
                                                 "annotations": []}]}


def sse_events(response_id: str, model: str, items: list[dict[str, Any]]) -> list[dict]:
    """The event sequence of one streamed response carrying ``items``."""
    base = {"id": response_id, "object": "response", "model": model, "output": []}
    events: list[dict] = [{"type": "response.created", "response": {**base,
                                                                     "status": "in_progress"}}]
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": item})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append({"type": "response.output_text.delta", "output_index": index,
                           "content_index": 0, "item_id": item["id"], "delta": text})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": item})
    usage = dict(USAGE)
    events.append({"type": "response.completed", "response": {
        **base, "status": "completed", "output": items, "usage": usage}})
    return events


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        return

    def _record(self, body: dict[str, Any] | None) -> None:
        auth = self.headers.get("Authorization") or ""
        bearer = auth[7:] if auth.lower().startswith("bearer ") else None
        with self.server.state.lock:
            self.server.state.requests.append(RecordedRequest(self.command, self.path,
                                                              bearer, body))

    def _send_json(self, status: int, document: dict[str, Any]) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._record(None)
        if self.path.split("?")[0].endswith("/models"):
            self._send_json(200, {"object": "list", "data": [], "models": []})
        else:
            self._send_json(404, {"error": {"message": f"no {self.path} here"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        self._record(body)
        if not self.path.split("?")[0].endswith("/responses"):
            self._send_json(404, {"error": {"message": f"no {self.path} here"}})
            return
        script = Script(body)
        if LIMIT_WORD in script.prompt:
            self._send_json(429, LIMIT_ERROR)
            return
        try:
            items = script.decide()
        except LookupError as exc:
            items = [_message(f"stand-in error: {exc}")]
        if SLOW in script.prompt:
            time.sleep(SLOW_S)
        response_id = f"resp_{self.server.state.next_id()}"
        events = sse_events(response_id, str(body.get("model", "standin")), items)
        payload = b"".join(
            f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: StandinState


class OpenAIStandin:
    """The stand-in server on 127.0.0.1 (port chosen by the OS), in a thread."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = StandinState()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="openai-standin")

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def responses_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/responses")]

    def __enter__(self) -> OpenAIStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
