"""The fake agent as OpenCode 1.18.33: its config, plugins, events and refusals.

What differs from the other CLIs, each as the real one does it (``core.providers.opencode``,
``tests/fixtures/hooks/opencode-1.18.33-*.jsonl``, and the binary's own refusals):

* **Config** is layered: the person's global ``$XDG_CONFIG_HOME/opencode/{config,opencode}
  .json``, the project's ``opencode.json``, then ``OPENCODE_CONFIG_CONTENT`` last (plugin
  lists are concatenated, other tables merged key by key). ``{env:NAME}`` in a value is
  the variable's value.
* **Hooks** are plugins, ES modules the fake cannot run. It reads what a plugin of
  Switchboard's shape says (``core.providers.opencode.PLUGIN_JS`` or the ``hooks install``
  copy): which events it passes on (``new Set([...])``), the hook argv (from the variable
  it names, or written in) and the usage file; each passed event runs ``<hook argv>
  --provider opencode <event>`` with the JSON on stdin and ``transcript_path`` added, in
  order, as the plugin does. A plugin the fake cannot read is reported and left out; an
  ``npm`` plugin name is left out (the real one installs it with bun). Plugins come from
  the config's ``plugin`` list and the project's ``.opencode/plugin(s)/*.js``.
* **Identity**: a new session has no id until its first prompt; then ``ses_`` and 26
  letters or digits, announced by ``session.created``. ``--session ID`` resumes it and
  sends no event at start. An id that does not start with ``ses`` is refused ("Invalid
  session ID: unknown error"), an unknown one too ("Session not found: ID"); both exit 1.
* **Events per turn**: ``chat.message`` (the typed text as a part), ``session.status``
  busy, for a shell command ``tool.execute.before``, ``permission.asked`` when the
  config's rule for ``bash`` is ``ask`` (the built-in agent's default lets it run),
  ``permission.replied``, ``tool.execute.after`` (``metadata.exit``), and at the end
  ``session.status`` idle then ``session.idle``. Nothing when the TUI exits.
* **Agent tools**: ``mcp.switchboard`` of type ``remote`` (Streamable HTTP, headers with
  ``{env:...}``); a tool whose rule is ``ask`` waits for the person first.
* **Record**: each message is appended to the fake's own session file (never the
  person's ``$XDG_DATA_HOME/opencode``); no model, so no usage line is written.
"""

from __future__ import annotations

import json
import re
import secrets
import string
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.providers.fake import transcript
from core.providers.fake.argv import OPENCODE_ERROR
from core.providers.fake.mcp import HttpServer

OPENCODE_VERSION = "1.18.33"
SHELL_TOOL = "bash"
MODEL = {"providerID": "fake", "modelID": "fake-model"}
CONFIG_ENV = "OPENCODE_CONFIG_CONTENT"
HOOK_TIMEOUT_S = 30.0
_ID_CHARS = string.ascii_letters + string.digits
_ENV_REF = re.compile(r"\{env:([^}]+)\}")
_WANTED = re.compile(r"new Set\((\[[^\]]*\])\)")
_HOOK_FROM_ENV = re.compile(r'const HOOK = JSON\.parse\(process\.env\.(\w+) \|\| "\[\]"\);')
_HOOK_WRITTEN = re.compile(r"const HOOK = (\[.*?\]);")
_USAGE_FROM_ENV = re.compile(r'const USAGE = process\.env\.(\w+) \|\| "";')


def new_id(prefix: str) -> str:
    """An id as OpenCode writes them: a prefix and 26 letters or digits."""
    return prefix + "".join(secrets.choice(_ID_CHARS) for _ in range(26))


# --- config ------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def config(env: dict[str, str], cwd: str) -> dict[str, Any]:
    """The merged config, in OpenCode's order (module docstring), ``{env:...}`` expanded."""
    base = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME", "~")).expanduser()
                / ".config") / "opencode"
    layers = [_read_json(base / "config.json"), _read_json(base / "opencode.json"),
              _read_json(Path(cwd) / "opencode.json")]
    try:
        inline = json.loads(env.get(CONFIG_ENV) or "{}")
    except ValueError:
        inline = {}
    layers.append(inline if isinstance(inline, dict) else {})
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in _expand(layer, env).items():
            if key == "plugin" and isinstance(value, list):
                merged["plugin"] = [*merged.get("plugin", []), *value]
            elif isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            elif key == "permission" and isinstance(value, str):
                merged[key] = {**merged.get(key, {}), "*": value}
            else:
                merged[key] = value
    return merged


def _expand(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)
    if isinstance(value, dict):
        return {key: _expand(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand(item, env) for item in value]
    return value


def rule(document: dict[str, Any], name: str) -> str:
    """``allow``, ``ask`` or ``deny`` for a tool: its own rule, else ``*``, else allow
    (1.18.33's build agent runs bash and MCP tools unasked by default)."""
    rules = document.get("permission")
    if isinstance(rules, str):
        return rules
    if not isinstance(rules, dict):
        return "allow"
    for key in (name, "*"):
        value = rules.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, dict):  # per pattern: the catch-all one decides here
            found = value.get("*")
            return found if isinstance(found, str) else "ask"
    return "allow"


def agent_tools(document: dict[str, Any], name: str = "switchboard") -> HttpServer | str | None:
    """``mcp.<name>`` as the fake can reach it: a remote server, or why it cannot."""
    servers = document.get("mcp")
    entry = servers.get(name) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or entry.get("enabled") is False:
        return None
    if entry.get("type") != "remote" or not isinstance(entry.get("url"), str):
        return f"MCP server {name}: only type remote is emulated"
    headers = entry.get("headers")
    pairs = headers.items() if isinstance(headers, dict) else ()
    return HttpServer(entry["url"], tuple((str(k), str(v)) for k, v in pairs))


# --- plugins -----------------------------------------------------------------


@dataclass(frozen=True)
class Plugin:
    """What a plugin of Switchboard's shape does with the events it is given."""

    source: str
    hook: tuple[str, ...]
    wanted: frozenset[str]
    usage: str | None


def read_plugin(text: str, source: str, env: dict[str, str]) -> Plugin | None:
    """The plugin's behaviour, or None when it is not of Switchboard's shape."""
    wanted = _WANTED.search(text)
    if wanted is None:
        return None
    hook: object = []
    if (named := _HOOK_FROM_ENV.search(text)) is not None:
        try:
            hook = json.loads(env.get(named.group(1)) or "[]")
        except ValueError:
            hook = []
    elif (written := _HOOK_WRITTEN.search(text)) is not None:
        hook = json.loads(written.group(1))
    usage = _USAGE_FROM_ENV.search(text)
    return Plugin(source, tuple(str(part) for part in hook) if isinstance(hook, list) else (),
                  frozenset(json.loads(wanted.group(1))),
                  (env.get(usage.group(1)) or None) if usage else None)


def plugin_sources(document: dict[str, Any], cwd: str) -> list[Path | str]:
    """The config's ``file://`` plugins, then the project's plugin folders; an ``npm``
    name stays a string (not loaded by the fake)."""
    found: list[Path | str] = []
    for spec in document.get("plugin") or []:
        if isinstance(spec, str) and spec.startswith("file://"):
            found.append(Path(urllib.parse.unquote(urllib.parse.urlparse(spec).path)))
        elif isinstance(spec, str):
            found.append(spec)
    for folder in ("plugin", "plugins"):
        found += sorted((Path(cwd) / ".opencode" / folder).glob("*.js"))
    return found


def load_plugins(document: dict[str, Any], cwd: str, env: dict[str, str],
                 report: Callable[[str], None]) -> list[Plugin]:
    plugins = []
    for source in plugin_sources(document, cwd):
        if isinstance(source, str):
            report(f"  ⚠ plugin {source}: npm plugins are not emulated")
            continue
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            report(f"  ⚠ plugin {source} failed to load: {exc.strerror}")
            continue
        plugin = read_plugin(text, str(source), env)
        if plugin is not None:
            plugins.append(plugin)
    return plugins


@dataclass
class PluginRunner:
    """Hands each event to every plugin that passes it on, as the plugin's ``deliver``."""

    plugins: list[Plugin]
    env: dict[str, str]
    report: Callable[[str], None] = print

    def fire(self, event: str, payload: dict, *, match: str | None = None) -> list[str]:
        """``payload["events"]``: the ``(name, document)`` pairs of one step, in order
        (the fake's steps are Claude's names; OpenCode sends several events for one).
        Returns no added context: OpenCode's events cannot add any."""
        for name, document in payload.get("events", ()):
            for plugin in self.plugins:
                if plugin.hook and name in plugin.wanted:
                    sent = {**document, "transcript_path": plugin.usage} if plugin.usage \
                        else document
                    self._run(name, [*plugin.hook, "--provider", "opencode", name], sent)
        return []

    def _run(self, name: str, argv: list[str], document: dict) -> None:
        try:
            done = subprocess.run(argv, input=json.dumps(document).encode("utf-8"),
                                  capture_output=True, env=self.env, timeout=HOOK_TIMEOUT_S,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.report(f"  ⎿ plugin: {name} hook failed: {exc}")
            return
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            self.report(f"  ⎿ plugin: {name} hook exited {done.returncode}"
                        + (f": {detail[-1][:160]}" if detail else ""))


# --- sessions ----------------------------------------------------------------


def _store() -> Path:
    return transcript.root() / "opencode" / "sessions"


def session_file(session_id: str) -> Path:
    return _store() / f"{session_id}.jsonl"


def refusal(session_id: str) -> str | None:
    """What 1.18.33 says for ``--session ID`` it cannot open (exit 1), else None."""
    if not session_id.startswith("ses"):
        return f"{OPENCODE_ERROR}Invalid session ID: unknown error"
    if "/" in session_id or not session_file(session_id).exists():
        return f"{OPENCODE_ERROR}Session not found: {session_id}"
    return None


def _event(kind: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"id": new_id("evt_"), "type": kind, "properties": properties}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class OpencodeTurns:
    """One OpenCode session's events, shaped as recorded (``session_id`` empty until the
    first prompt creates it)."""

    session_id: str
    cwd: str
    created: bool = False
    message_id: str = ""
    asked: dict[str, str] = field(default_factory=dict)
    """call id -> the permission request id still waiting for its reply."""

    def start(self) -> list[tuple[str, dict]]:
        """A new session is made at its first prompt (``session.created``)."""
        if self.session_id:
            return []
        self.session_id = new_id("ses_")
        self.created = True
        now = _now_ms()
        info = {"id": self.session_id, "slug": "fake-session", "version": OPENCODE_VERSION,
                "projectID": "global", "directory": self.cwd, "path": self.cwd.lstrip("/"),
                "title": "New session", "agent": "build",
                "model": {"id": MODEL["modelID"], "providerID": MODEL["providerID"]},
                "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0,
                                      "cache": {"read": 0, "write": 0}},
                "time": {"created": now, "updated": now}}
        return [("session.created", _event("session.created",
                                            {"sessionID": self.session_id, "info": info}))]

    def prompt(self, text: str) -> list[tuple[str, dict]]:
        """``chat.message`` and busy (after :meth:`start` made the session)."""
        events: list[tuple[str, dict]] = []
        self.message_id = new_id("msg_")
        message = {"id": self.message_id, "role": "user", "sessionID": self.session_id,
                   "time": {"created": _now_ms()}, "agent": "build", "model": dict(MODEL)}
        part = {"type": "text", "text": text, "messageID": self.message_id,
                "sessionID": self.session_id, "id": new_id("prt_")}
        events.append(("chat.message", {"input": {"sessionID": self.session_id,
                                                  "agent": "build", "model": dict(MODEL)},
                                        "output": {"message": message, "parts": [part]}}))
        events.append(self.status("busy"))
        return events

    def status(self, kind: str) -> tuple[str, dict]:
        return ("session.status", _event("session.status", {
            "sessionID": self.session_id, "status": {"type": kind}}))

    def tool_before(self, call_id: str, tool: str, args: dict[str, Any]) -> tuple[str, dict]:
        return ("tool.execute.before", {"input": {"tool": tool, "sessionID": self.session_id,
                                                  "callID": call_id},
                                        "output": {"args": args}})

    def permission_asked(self, call_id: str, tool: str, command: str | None) -> tuple[str, dict]:
        request = new_id("per_")
        self.asked[call_id] = request
        properties: dict[str, Any] = {"id": request, "sessionID": self.session_id,
                                      "permission": tool}
        if command is not None:
            properties.update(patterns=[command], metadata={"command": command},
                              always=[command.split(" ", 1)[0] + " *"])
        properties["tool"] = {"messageID": self.message_id, "callID": call_id}
        return ("permission.asked", _event("permission.asked", properties))

    def permission_replied(self, call_id: str, reply: str) -> list[tuple[str, dict]]:
        request = self.asked.pop(call_id, None)
        if request is None:
            return []
        return [("permission.replied", _event("permission.replied", {
            "sessionID": self.session_id, "requestID": request, "reply": reply}))]

    def tool_after(self, call_id: str, tool: str, args: dict[str, Any], output: str,
                   exit_code: int) -> tuple[str, dict]:
        return ("tool.execute.after", {
            "input": {"tool": tool, "sessionID": self.session_id, "callID": call_id,
                      "args": args},
            "output": {"title": str(args.get("command") or tool),
                       "metadata": {"output": output, "exit": exit_code, "truncated": False},
                       "output": output}})

    def end(self) -> list[tuple[str, dict]]:
        """The turn's end: a permission never answered is rejected, then idle."""
        events = [pair for call in list(self.asked)
                  for pair in self.permission_replied(call, "reject")]
        return [*events, self.status("idle"),
                ("session.idle", _event("session.idle", {"sessionID": self.session_id}))]

    def record(self, role: str, text: str) -> None:
        """One message in the fake's own session file (best effort)."""
        if not self.session_id:
            return
        path = session_file(self.session_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"role": role, "text": text, "directory": self.cwd,
                                         "time": _now_ms()}) + "\n")
        except OSError:
            pass


def copy_session(source: str, target: str) -> int:
    """``--session ID --fork``: the new session starts with the old one's messages."""
    lines = session_file(source).read_text(encoding="utf-8").splitlines()
    path = session_file(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def events(payload: Iterable[tuple[str, dict]]) -> dict:
    """The step payload :class:`PluginRunner` reads."""
    return {"events": list(payload)}
