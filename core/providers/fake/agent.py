"""A fake Claude Code / Codex / Gemini CLI / OpenCode that runs in a tmux pane and fires
real-shaped hooks (OpenCode: plugin events, ``core.providers.fake.opencode``).

Tests and the demo need a provider that behaves like the real one at the
edges Switchboard depends on, without a model or network: a strict
``--version`` line, a prompt that accepts typed input and bracketed paste,
hooks invoked with payloads whose keys match the recorded fixtures
(``tests/fixtures/hooks``), stable session/thread ids, fresh prompt/turn ids,
and calls to the agent tools. Stdlib only, so it starts fast anywhere.

Hook commands come from, in order: ``--hook-command`` (``CMD --provider P
EVENT``); for Claude the ``--settings FILE-OR-JSON`` hooks; for Codex the
hooks.json, ``[hooks]`` and ``notify`` of ``$CODEX_HOME`` and ``./.codex``
(never ``~/.codex``) and the same keys given as ``-c`` overrides; else
``switchboard hook --provider P EVENT``.

The argv is read exactly as the real CLI reads it (``core.providers.fake.argv``:
commander.js for Claude Code, clap for Codex, checked against the pinned
binaries), and what the real one refuses is refused with its message and exit
code, so a LaunchPlan that runs here runs there. The fake's own options
(``--provider``, ``--hook-command``, ...) are extra options of that grammar.

Per prompt: UserPromptSubmit; with "TOOLTEST" in the line PreToolUse,
PermissionRequest (+ Notification permission_prompt for Claude), PostToolUse;
with "/subagents N" N subagents start (SubagentStart each, both CLIs; a Codex subagent
then sends its own UserPromptSubmit under the lead's session with its agent_id, as 0.171.0
does) and stay running until "/subagents done" stops them all (SubagentStop each);
"/subagents after N" starts them just after the turn's Stop; with "NOTICETEST" (Claude)
a command auto mode checks, behind the notice Claude Code
2.1.332 puts up mid-turn for people behind a gateway: PreToolUse, Notification
agent_needs_input, a full-screen notice that only Enter continues (typed text and
pastes are lost, Esc cancels the call), then PostToolUse;
a short reply; Stop (Codex: then ``notify`` agent-turn-complete) unless the
line contains a ``--no-stop-on`` word. SessionStart at start; SessionEnd at
exit (Claude only by default: Codex has no SessionEnd hook).

Each prompt and reply is appended to the session's transcript (``core.providers.fake.
transcript``: the CLIs' layout under the fake's own folder, never ``~/.claude`` or
``~/.codex``); a fork (Claude ``--resume ID --fork-session``, Codex ``fork ID``) starts
its transcript with the parent's messages and says how many it carried.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import SupportsInt

from core.model.control_line import CONTROL_TEMPLATE
from core.providers.fake import argv as fake_argv
from core.providers.fake import gemini as fake_gemini
from core.providers.fake import opencode as fake_opencode
from core.providers.fake import transcript
from core.providers.fake.mcp import (
    HttpMcpClient,
    HttpRefused,
    HttpServer,
    McpClient,
    OverrideError,
    StdioServer,
    parse_overrides,
)

VERSION_LINES = {"claude": "{version} (Claude Code)", "codex": "codex-cli {version}",
                 "gemini": "{version}", "opencode": "{version}"}
DEFAULT_VERSIONS = {"claude": "2.1.197", "codex": "0.171.0",
                    "gemini": fake_gemini.GEMINI_VERSION,
                    "opencode": fake_opencode.OPENCODE_VERSION}
DEFAULT_REPLY = "FAKE-OK: offline stand-in reply."
TOOL_WORD = "TOOLTEST"
NOTICE_WORD = "NOTICETEST"
NOTICE_TITLE = ("We're changing auto mode to no longer charge for classifier requests in"
                " Claude Code.")
NOTICE_MESSAGE = "Auto mode has a classifier billing notice to acknowledge"
"""The notice's words and its Notification's message in Claude Code 2.1.332."""
NOTICE_HINT = "Enter to continue · Esc to cancel"
HOOK_TIMEOUT_S = 30.0
AGENT_TIMEOUT_S = 60.0
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"


class SessionClosed(Exception):
    """The pane is going away (SIGHUP/SIGTERM): end the session like the real CLI."""


def uuid7() -> str:
    """A time-ordered UUIDv7 like Codex's thread and turn ids."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    return str(uuid.UUID(int=value))


# --- hook dispatch ---------------------------------------------------------


@dataclass(frozen=True)
class HookRunner:
    """Runs one provider event through whichever hook source is configured."""

    provider: str
    direct_command: tuple[str, ...] | None = None
    shell_hooks: dict[str, tuple[tuple[str, str | None, float], ...]] = field(default_factory=dict)
    notify_argv: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    report: Callable[[str], None] = print

    def fire(self, event: str, payload: dict, *, match: str | None = None) -> list[str]:
        """Run the event's hooks; returns what they asked to add to the turn's context
        (``hookSpecificOutput.additionalContext``, as Claude reads it)."""
        if self.provider == "gemini":
            named = fake_gemini.event_name(event)
            if named is None:
                return []  # a step Gemini CLI sends no hook for
            event = named
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        if self.direct_command is not None:
            argv = [*self.direct_command, "--provider", self.provider, event]
            if event == "notify":
                return self._run(event, [*argv, body], None)
            return self._run(event, argv, body)
        if event == "notify":
            return self._run(event, [*self.notify_argv, body], None) if self.notify_argv else []
        added: list[str] = []
        for command, matcher, timeout in self.shell_hooks.get(event, ()):
            if _matches(matcher, match):
                added += self._run(event, ["/bin/sh", "-c", command], body, timeout)
        return added

    def _run(self, event: str, argv: list[str], stdin: str | None,
             timeout: float = HOOK_TIMEOUT_S) -> list[str]:
        try:
            done = subprocess.run(
                argv,
                input=(stdin or "").encode("utf-8"),
                capture_output=True,
                env=self.env,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.report(f"  ⎿ {event} hook failed: {exc}")
            return []
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            tail = f": {detail[-1][:160]}" if detail else ""
            self.report(f"  ⎿ {event} hook exited {done.returncode}{tail}")
            return []
        return _added_context(done.stdout)


def _added_context(stdout: bytes) -> list[str]:
    try:
        output = json.loads(stdout or b"null")
    except ValueError:
        return []  # plain text output is not context
    if not isinstance(output, dict):
        return []
    specific = output.get("hookSpecificOutput")
    text = specific.get("additionalContext") if isinstance(specific, dict) else None
    return [text] if isinstance(text, str) else []


def _matches(matcher: str | None, value: str | None) -> bool:
    if matcher in (None, "", "*") or value is None:
        return True
    try:
        return re.fullmatch(matcher, value) is not None
    except re.error:
        return False


HookTable = dict[str, list[tuple[str, str | None, float]]]


def _add_hook_groups(events: object, into: HookTable) -> None:
    """``{Event: [{matcher?, hooks: [{type, command, timeout?}]}]}`` (Claude settings,
    Codex hooks.json, Codex ``[hooks]`` in config.toml or ``-c hooks.Event=...``).
    Other keys (Codex ``hooks.state``) are not events and hold no groups."""
    if not isinstance(events, dict):
        return
    for event, groups in events.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict):
                continue
            for hook in group.get("hooks", []):
                if isinstance(hook, dict) and hook.get("type", "command") == "command" \
                        and hook.get("command"):
                    into.setdefault(event, []).append(
                        (hook["command"], group.get("matcher"),
                         float(hook.get("timeout", HOOK_TIMEOUT_S))))


def _load_hooks_file(path: Path, into: HookTable) -> None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    _add_hook_groups(document.get("hooks"), into)


def build_runner(args: Launch, env: dict[str, str], report: Callable[[str], None],
                 opencode_config: dict | None = None) -> HookRunner | fake_opencode.PluginRunner:
    if args.provider == "opencode":
        from core.providers.opencode_events import OPENCODE_EVENTS

        if args.hook_command:  # as a plugin passing every state event to that command
            plugins = [fake_opencode.Plugin("--hook-command", tuple(shlex.split(
                args.hook_command)), frozenset(OPENCODE_EVENTS), None)]
        else:
            plugins = fake_opencode.load_plugins(opencode_config or {}, os.getcwd(), env,
                                                 report)
        return fake_opencode.PluginRunner(plugins, env, report)
    if args.hook_command:
        return HookRunner(args.provider, tuple(shlex.split(args.hook_command)), env=env,
                          report=report)
    hooks: HookTable = {}
    notify: tuple[str, ...] | None = None
    configured = False
    if args.provider == "claude" and args.settings:
        configured = True
        _add_hook_groups((fake_argv.load_json_or_file(args.settings) or {}).get("hooks"), hooks)
    elif args.provider == "gemini" and env.get("GEMINI_CLI_HOME"):
        configured = True
        _add_hook_groups(fake_gemini.hook_groups(fake_gemini.settings(env)), hooks)
    elif args.provider == "codex":
        import tomllib

        folders = [Path(env["CODEX_HOME"])] if env.get("CODEX_HOME") else []
        folders.append(Path.cwd() / ".codex")
        folders = [folder for folder in dict.fromkeys(folders) if folder.is_dir()]
        configured = bool(folders)
        layers: list[dict] = []
        for folder in folders:
            _load_hooks_file(folder / "hooks.json", hooks)
            try:
                layers.append(tomllib.loads((folder / "config.toml").read_text(
                    encoding="utf-8")))
            except FileNotFoundError:
                continue
        layers.append(args.overrides)  # -c: the session-flags layer, applied last
        for layer in layers:
            if isinstance(layer.get("hooks"), dict):
                configured = True
                _add_hook_groups(layer["hooks"], hooks)
            if isinstance(layer.get("notify"), list):
                configured = True
                notify = tuple(str(part) for part in layer["notify"])
    if configured:
        frozen = {event: tuple(entries) for event, entries in hooks.items()}
        return HookRunner(args.provider, None, frozen, notify, env=env, report=report)
    return HookRunner(args.provider, ("switchboard", "hook"), env=env, report=report)


# --- payloads shaped like the recorded fixtures ------------------------------


@dataclass
class Session:
    """Identity and per-prompt ids; payload builders keep the fixtures' key order."""

    provider: str
    session_id: str
    cwd: str
    resumed: bool
    prompt_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    turn_id: str | None = None
    input_messages: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    tool_counter: int = 0

    @property
    def transcript_path(self) -> str:
        home = str(Path.home())
        if self.provider == "claude":
            return f"{home}/.claude/projects/{self.cwd.replace('/', '-')}/{self.session_id}.jsonl"
        stamp = time.gmtime(self.started)
        return (f"{home}/.codex/sessions/{time.strftime('%Y/%m/%d', stamp)}/rollout-"
                f"{time.strftime('%Y-%m-%dT%H-%M-%S', stamp)}-{self.session_id}.jsonl")

    def permission(self, tool: str, default: str) -> str:
        """``allow``, ``ask`` or ``deny`` for a tool; only OpenCode reads a rule for it."""
        return default

    def new_turn(self, prompt: str) -> None:
        if self.provider == "claude":
            self.prompt_id = str(uuid.uuid4())
        else:
            self.turn_id = uuid7()
            self.input_messages.append(prompt)

    def record(self, role: str, text: str) -> None:
        """Append one message to this session's transcript, as the CLI does (best
        effort: a transcript that cannot be written never stops a turn)."""
        line = transcript.claude_line(self.session_id, role, text) \
            if self.provider == "claude" else transcript.codex_line(role, text)
        with contextlib.suppress(OSError):
            transcript.append(self.transcript_path, [line])

    def new_tool_use_id(self) -> str:
        self.tool_counter += 1
        if self.provider == "claude":
            return "toolu_" + secrets.token_hex(10)
        return "call_" + secrets.token_hex(6)

    def _head(self, event: str, *, prompt_id: bool = True) -> dict:
        head: dict[str, object]  # a Codex turn id is null before the first turn
        if self.provider == "claude":
            head = {"session_id": self.session_id, "transcript_path": self.transcript_path,
                    "cwd": self.cwd}
            if prompt_id:
                head["prompt_id"] = self.prompt_id
            return head
        head = {"session_id": self.session_id}
        if prompt_id:
            head["turn_id"] = self.turn_id
        head.update(transcript_path=self.transcript_path, cwd=self.cwd, hook_event_name=event,
                    model="fake-model", permission_mode="default")
        return head

    def _claude_turn_head(self, event: str, *, effort: bool) -> dict:
        payload = self._head(event)
        payload["permission_mode"] = "default"
        if effort:
            payload["effort"] = {"level": "high"}
        payload["hook_event_name"] = event
        return payload

    def session_start(self) -> dict:
        source = "resume" if self.resumed else "startup"
        if self.provider == "claude":
            payload = self._head("SessionStart", prompt_id=False)
            payload.update(hook_event_name="SessionStart", source=source)
            return payload
        payload = self._head("SessionStart", prompt_id=False)
        payload["source"] = source
        return payload

    def user_prompt_submit(self, prompt: str) -> dict:
        if self.provider == "claude":
            payload = self._claude_turn_head("UserPromptSubmit", effort=False)
        else:
            payload = self._head("UserPromptSubmit")
        payload["prompt"] = prompt
        return payload

    def tool_event(self, event: str, command: str, description: str, tool_use_id: str,
                   **extra: object) -> dict:
        if self.provider == "claude":
            payload = self._claude_turn_head(event, effort=True)
            payload.update(tool_name="Bash",
                           tool_input={"command": command, "description": description})
        else:
            payload = self._head(event)
            tool_input: dict[str, str] = {"command": command}
            if event == "PermissionRequest":
                tool_input["description"] = description
            payload.update(tool_name="Bash", tool_input=tool_input)
        if event == "PermissionRequest":
            if self.provider == "claude":
                payload["permission_suggestions"] = [
                    {"type": "addDirectories", "directories": [self.cwd],
                     "destination": "session"},
                    {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
                ]
            return payload
        if event == "PostToolUse":
            if self.provider == "claude":
                payload["tool_response"] = extra.get("tool_response") or {
                    "stdout": "", "stderr": "", "interrupted": False, "isImage": False,
                    "noOutputExpected": True,
                }
                payload["tool_use_id"] = tool_use_id
                duration = extra.get("duration_ms", 5)
                if not isinstance(duration, str | SupportsInt):
                    raise TypeError(f"duration_ms must be a number, not {duration!r}")
                payload["duration_ms"] = int(duration)
                return payload
            payload["tool_response"] = extra.get("tool_response", "")
        payload["tool_use_id"] = tool_use_id
        return payload

    def subagent_event(self, event: str, agent_id: str, agent_type: str) -> dict:
        """SubagentStart/SubagentStop: the lead's session, the subagent's id and type
        (both CLIs' field names; Codex 0.166 to 0.171 also carry the turn)."""
        payload = self._claude_turn_head(event, effort=False) if self.provider == "claude" \
            else self._head(event)
        payload.update(agent_id=agent_id, agent_type=agent_type)
        if event == "SubagentStop":
            payload.update(stop_hook_active=False, last_assistant_message="done",
                           agent_transcript_path=f"{self.transcript_path}.{agent_id}")
        return payload

    def notification(self, message: str, notification_type: str) -> dict:
        payload = self._head("Notification")
        payload.update(hook_event_name="Notification", message=message,
                       notification_type=notification_type)
        return payload

    def stop(self, reply: str) -> dict:
        if self.provider == "claude":
            payload = self._claude_turn_head("Stop", effort=True)
            payload.update(stop_hook_active=False, last_assistant_message=reply,
                           background_tasks=[], session_crons=[])
            return payload
        payload = self._head("Stop")
        payload.update(stop_hook_active=False, last_assistant_message=reply)
        return payload

    def notify_turn_complete(self, reply: str) -> dict:
        return {"type": "agent-turn-complete", "thread-id": self.session_id,
                "turn-id": self.turn_id, "cwd": self.cwd, "client": "codex-tui",
                "input-messages": list(self.input_messages), "last-assistant-message": reply}

    def session_end(self, reason: str) -> dict:
        payload = self._head("SessionEnd")
        payload.update(hook_event_name="SessionEnd", reason=reason)
        return payload


@dataclass
class GeminiSession(Session):
    """Gemini CLI's payloads (``core.providers.fake.gemini``): its own event names, the
    common keys of its recording, no turn id, its chat record in its own layout."""

    chat_env: dict[str, str] = field(default_factory=dict)
    """The environment the chat folder is found from (GEMINI_CLI_HOME, else HOME)."""
    last_prompt: str = ""

    @property
    def transcript_path(self) -> str:
        return fake_gemini.chat_path(self.cwd, self.chat_env, self.session_id, self.started)

    def new_turn(self, prompt: str) -> None:
        self.last_prompt = prompt

    def record(self, role: str, text: str) -> None:
        lines = [] if transcript.stored(self.transcript_path).exists() else [
            fake_gemini.header(self.session_id)]
        with contextlib.suppress(OSError):
            transcript.append(self.transcript_path,
                              [*lines, fake_gemini.chat_line(role, text)])

    def new_tool_use_id(self) -> str:
        self.tool_counter += 1
        return f"{fake_gemini.SHELL_TOOL}-{self.tool_counter}"

    def _gemini_head(self, event: str) -> dict:
        named = fake_gemini.event_name(event) or event
        return fake_gemini.head(self.session_id, self.transcript_path, self.cwd, named)

    def session_start(self) -> dict:
        payload = self._gemini_head("SessionStart")
        payload["source"] = "resume" if self.resumed else "startup"
        return payload

    def user_prompt_submit(self, prompt: str) -> dict:
        payload = self._gemini_head("UserPromptSubmit")
        payload["prompt"] = prompt
        return payload

    def tool_event(self, event: str, command: str, description: str, tool_use_id: str,
                   **extra: object) -> dict:
        payload = self._gemini_head(event)
        payload.update(tool_name=fake_gemini.SHELL_TOOL,
                       tool_input={"command": command, "description": description})
        if event == "PostToolUse":
            payload["tool_response"] = {"llmContent": str(extra.get("tool_response", ""))[:2000],
                                        "returnDisplay": ""}
        return payload

    def subagent_event(self, event: str, agent_id: str, agent_type: str) -> dict:
        return self._gemini_head(event)  # never sent (fake_gemini.EVENT_NAMES)

    def notification(self, message: str, notification_type: str) -> dict:
        payload = self._gemini_head("Notification")
        payload.update(notification_type=notification_type, message=message,
                       details={"type": "exec", "title": "Confirm Shell Command"})
        return payload

    def stop(self, reply: str) -> dict:
        payload = self._gemini_head("Stop")
        payload.update(prompt=self.last_prompt, prompt_response=reply, stop_hook_active=False)
        return payload

    def session_end(self, reason: str) -> dict:
        payload = self._gemini_head("SessionEnd")
        payload["reason"] = "exit"
        return payload


@dataclass
class OpencodeSession(Session):
    """OpenCode's plugin events for the fake's turn steps (``core.providers.fake.opencode``):
    each step's payload is ``{"events": [(name, document), ...]}``, what the plugin runner
    hands on. The session id is empty until the first prompt creates it."""

    document: dict = field(default_factory=dict)
    """The merged config: its permission rules."""
    fork_source: str | None = None
    turns: fake_opencode.OpencodeTurns | None = None
    opened: list = field(default_factory=list)
    """``session.created`` of the prompt that made the session, sent with that prompt."""

    def _turns(self) -> fake_opencode.OpencodeTurns:
        if self.turns is None:
            self.turns = fake_opencode.OpencodeTurns(self.session_id, self.cwd)
        return self.turns

    def permission(self, tool: str, default: str) -> str:
        return fake_opencode.rule(self.document, tool)

    def new_turn(self, prompt: str) -> None:
        turns = self._turns()
        self.opened = turns.start()
        if self.opened:
            self.session_id = turns.session_id
            if self.fork_source is not None:
                fake_opencode.copy_session(self.fork_source, self.session_id)

    def record(self, role: str, text: str) -> None:
        self._turns().record(role, text)

    def new_tool_use_id(self) -> str:
        self.tool_counter += 1
        return "toolu_" + secrets.token_hex(12)

    def session_start(self) -> dict:
        return fake_opencode.events([])  # OpenCode sends nothing at start

    def user_prompt_submit(self, prompt: str) -> dict:
        opened, self.opened = self.opened, []
        return fake_opencode.events([*opened, *self._turns().prompt(prompt)])

    def tool_event(self, event: str, command: str, description: str, tool_use_id: str,
                   **extra: object) -> dict:
        turns = self._turns()
        args = {"command": command, "description": description}
        if event == "PreToolUse":
            return fake_opencode.events([turns.tool_before(tool_use_id, "bash", args)])
        if event == "PermissionRequest":
            return fake_opencode.events([turns.permission_asked(tool_use_id, "bash", command)])
        response = extra.get("tool_response")
        output = response if isinstance(response, str) else "(no output)"
        return fake_opencode.events([*turns.permission_replied(tool_use_id, "once"),
                                     turns.tool_after(tool_use_id, "bash", args, output, 0)])

    def tool_permission(self, tool: str, call_id: str, reply: str | None) -> dict:
        """An MCP tool's question (``reply`` None) or the person's answer to it."""
        turns = self._turns()
        if reply is None:
            return fake_opencode.events([turns.permission_asked(call_id, tool, None)])
        return fake_opencode.events(turns.permission_replied(call_id, reply))

    def subagent_event(self, event: str, agent_id: str, agent_type: str) -> dict:
        return fake_opencode.events([])

    def notification(self, message: str, notification_type: str) -> dict:
        return fake_opencode.events([])

    def stop(self, reply: str) -> dict:
        return fake_opencode.events(self._turns().end())

    def session_end(self, reason: str) -> dict:
        return fake_opencode.events([])  # no event when the TUI exits


# --- terminal input ----------------------------------------------------------


class PromptReader:
    """Reads one submitted line at a time; bracketed paste markers never reach the line.

    On a TTY it runs in raw mode with its own echo, so a paste (even one
    containing newlines) is inserted, not submitted; only Enter outside a paste
    submits. Without a TTY (pipes in tests) it reads lines and strips markers.
    """

    def __init__(self, fd: int, write: Callable[[str], None]) -> None:
        self.fd = fd
        self.write = write
        self.tty = os.isatty(fd)
        self.saved: list | None = None
        self.pending = b""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.eof = False

    def __enter__(self) -> PromptReader:
        if self.tty:
            import termios

            self.saved = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[0] &= ~(termios.ICRNL | termios.IXON | termios.INLCR)
            mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
            mode[6][termios.VMIN] = 1
            mode[6][termios.VTIME] = 0
            termios.tcsetattr(self.fd, termios.TCSADRAIN, mode)
            self.write("\x1b[?2004h")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tty:
            import termios

            self.write("\x1b[?2004l")
            if self.saved is not None:
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def read_line(self) -> str | None:
        if not self.tty:
            return self._read_piped_line()
        line: list[str] = []
        in_paste = False
        while True:
            if not self.pending:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    return "".join(line) if line else None
                self.pending = chunk
            data, self.pending = self.pending, b""
            index = 0
            while index < len(data):
                byte = data[index : index + 1]
                if byte == b"\x1b":
                    rest = data[index:]
                    if not _escape_complete(rest):
                        more = os.read(self.fd, 4096)
                        if more:
                            self.pending = rest + more
                            break
                    if rest.startswith(PASTE_START):
                        in_paste, index = True, index + len(PASTE_START)
                        continue
                    if rest.startswith(PASTE_END):
                        in_paste, index = False, index + len(PASTE_END)
                        continue
                    index += _escape_length(rest)
                    continue
                index += 1
                if byte in (b"\r", b"\n"):
                    if in_paste:
                        line.append("\n")
                        self.write("\r\n")
                        continue
                    self.pending = data[index:]
                    self.write("\r\n")
                    return "".join(line)
                if byte in (b"\x7f", b"\x08"):
                    if line:
                        line.pop()
                        self.write("\b \b")
                elif byte == b"\x03":
                    line.clear()
                    self.write("^C\r\n> ")
                elif byte == b"\x04":
                    if not line:
                        self.write("\r\n")
                        return None
                elif byte == b"\x15":
                    self.write("\b \b" * len(line))
                    line.clear()
                elif byte == b"\t" or byte >= b" ":
                    text = self.decoder.decode(byte)
                    if text:
                        line.append(text)
                        self.write(text)

    def read_key(self) -> str | None:
        """One key of a dialog: ``up``, ``down``, ``enter``, ``escape`` (a lone Esc),
        ``other``; a bracketed paste is one ``other`` (dialogs refuse pastes); None at
        end of input."""
        if not self.pending:
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return None
            self.pending = chunk
        data = self.pending
        if data.startswith(PASTE_START):
            end = data.find(PASTE_END)
            self.pending = data[end + len(PASTE_END):] if end >= 0 else b""
            return "other"
        for seq, key in ((b"\x1b[A", "up"), (b"\x1bOA", "up"), (b"\x1b[B", "down"),
                         (b"\x1bOB", "down"), (b"\r", "enter"), (b"\n", "enter")):
            if data.startswith(seq):
                self.pending = data[len(seq):]
                return key
        if data == b"\x1b":
            self.pending = b""
            return "escape"
        step = _escape_length(data) if data.startswith(b"\x1b") else 1
        self.pending = data[step:]
        return "other"

    def _read_piped_line(self) -> str | None:
        raw = b""
        while not raw.endswith(b"\n"):
            chunk = os.read(self.fd, 1)
            if not chunk:
                break
            raw += chunk
        if not raw:
            return None
        raw = raw.replace(PASTE_START, b"").replace(PASTE_END, b"")
        return raw.decode("utf-8", "replace").rstrip("\r\n")


STARTUP_OPTIONS = ("Yes, set auto mode as my default permission mode", "No, keep manual mode")


def answer_dialog(reader: PromptReader, write: Callable[[str], None], title: str) -> str | None:
    """Show a start-up dialog and wait for the person's choice (None: input ended)."""
    cursor = 0
    while True:
        write("\x1b[2J\x1b[H" + "─" * 60 + "\r\n")
        write(f"  {title}\r\n\r\n")
        for index, option in enumerate(STARTUP_OPTIONS):
            write(("  ❯ " if index == cursor else "    ") + option + "\r\n")
        write("\r\n  Enter to select · Esc to cancel\r\n")
        key = reader.read_key()
        if key is None:
            return None
        if key in ("up", "down"):
            cursor = 1 - cursor
        elif key == "enter":
            write("\x1b[2J\x1b[H")
            return STARTUP_OPTIONS[cursor]


def show_notice(read_key: Callable[[], str | None], write: Callable[[str], None],
                title: str) -> bool:
    """A full-screen notice mid-turn: True once the person presses Enter, False on Esc
    or when input ends. Any other key (typed text, a paste) is lost, as in the CLI."""
    write("\x1b[2J\x1b[H" + "─" * 60 + "\r\n")
    write(f"  {title}\r\n\r\n")
    write("  Auto mode works for now, and its classifier requests are billed as before.\r\n")
    write(f"\r\n  {NOTICE_HINT}\r\n")
    while True:
        key = read_key()
        if key in (None, "escape"):
            write("\x1b[2J\x1b[H")
            return False
        if key == "enter":
            write("\x1b[2J\x1b[H")
            return True


def _escape_complete(data: bytes) -> bool:
    """Whether ``data`` (starting with ESC) holds a whole escape sequence yet."""
    if len(data) < 2:
        return False
    if data[1:2] in (b"[", b"O"):
        return any(0x40 <= value <= 0x7E for value in data[2:])
    return True


def _escape_length(data: bytes) -> int:
    """Length of an escape sequence to ignore (arrow keys and the like)."""
    if len(data) >= 2 and data[1:2] in (b"[", b"O"):
        for end in range(2, len(data)):
            if 0x40 <= data[end] <= 0x7E:
                return end + 1
        return len(data)
    return min(2, len(data))


# --- the agent -------------------------------------------------------------


@dataclass
class FakeAgent:
    session: Session
    hooks: HookRunner | fake_opencode.PluginRunner
    agent_command: tuple[str, ...]
    no_stop_on: tuple[str, ...]
    reply: str
    env: dict[str, str]
    write: Callable[[str], None]
    mcp: McpClient | HttpMcpClient | None = None
    ask: Callable[[str], str | None] | None = None
    """Reads the person's answer to a question on the terminal; None without one
    (print mode), where a tool that needs permission is denied, as the real CLIs do."""
    notice: str | None = None
    """A dialog to show now that the turn has ended."""
    notice_next: str | None = None
    """``/notice TITLE``: the dialog to show after the next turn."""
    read_key: Callable[[], str | None] | None = None
    """Reads one key of a dialog (``PromptReader.read_key``); None without a terminal
    (print mode), where the CLI has no surface for a notice and goes on."""
    subagents: list[str] = field(default_factory=list)
    """Ids of the subagents started by ``/subagents N`` and not stopped yet."""

    def say(self, text: str) -> None:
        self.write(text + "\n")

    def turn(self, prompt: str) -> None:
        self.session.new_turn(prompt)
        self.session.record("user", prompt)
        added = self.hooks.fire("UserPromptSubmit", self.session.user_prompt_submit(prompt))
        stripped = prompt.strip()
        if TOOL_WORD in prompt:
            self._tooltest()
        if NOTICE_WORD in prompt and self.session.provider == "claude":
            self._noticed_tool()
        subagents = stripped[len("/subagents "):].strip() \
            if stripped.startswith("/subagents ") else None
        if subagents is not None and not subagents.startswith("after "):
            self._subagents(subagents)
        if stripped == CONTROL_TEMPLATE or CONTROL_TEMPLATE in added:
            # The fixed line typed in, or handed over as context: a model follows it.
            self._agent_tool("transition_claim", {}, show_instructions=True)
        elif stripped.startswith("/push "):
            title, brief = _split_pair(stripped[len("/push "):])
            self._agent_tool("task_push", {"title": title, "brief": brief})
        elif stripped.startswith("/msg "):
            to, text = _split_pair(stripped[len("/msg "):])
            self._agent_tool("message_send", {"to": to, "text": text})
        elif stripped.startswith("[switchboard] message ") and "message_poll()" in stripped:
            # A broker notification: a model reads its messages and ACKs each one.
            self._read_messages()
        elif stripped.startswith("/complete "):
            summary, next_action = _split_pair(stripped[len("/complete "):])
            self._agent_tool("task_complete_return",
                             {"summary": summary, "next_action": next_action})
        if stripped.startswith("/notice "):
            # a notice the CLI shows once the NEXT turn has ended (as Claude Code does for
            # people behind gateways): a dialog over the prompt until answered
            self.notice_next = stripped[len("/notice "):].strip() or "A notice"
        elif self.notice_next is not None:
            self.notice, self.notice_next = self.notice_next, None
        self.say(f"● {self.reply}")
        self.session.record("assistant", self.reply)
        if any(word in prompt for word in self.no_stop_on):
            self.say("  ⎿ Interrupted · no Stop for this turn")
            return
        self.hooks.fire("Stop", self.session.stop(self.reply))
        if self.session.provider == "codex":
            self.hooks.fire("notify", self.session.notify_turn_complete(self.reply))
        if subagents is not None and subagents.startswith("after "):
            # background subagents that start once the lead's turn has ended
            self._subagents(subagents[len("after "):].strip())

    def _subagents(self, how: str) -> None:
        """``N``: N more subagents start and keep running (in the background, as the real
        CLIs' Agent/spawn tools do by default); ``done``: every running one stops."""
        if how == "done":
            for agent_id in self.subagents:
                self.hooks.fire("SubagentStop", self.session.subagent_event(
                    "SubagentStop", agent_id, "general-purpose"), match="general-purpose")
            self.say(f"  ⎿ {len(self.subagents)} subagents done")
            self.subagents.clear()
            return
        count = int(how) if how.isdigit() else 1
        for _ in range(count):
            agent_id = "a" + secrets.token_hex(8)
            self.subagents.append(agent_id)
            self.hooks.fire("SubagentStart", self.session.subagent_event(
                "SubagentStart", agent_id, "general-purpose"), match="general-purpose")
            if self.session.provider == "codex":
                prompt = self.session.user_prompt_submit("You are a helper: say hello.")
                prompt.update(agent_id=agent_id, agent_type="default")
                self.hooks.fire("UserPromptSubmit", prompt)
        self.say(f"  ⎿ {count} subagents started")

    def _tooltest(self) -> None:
        marker = f"{self.session.cwd}/{'' if self.session.provider == 'claude' else 'codex_'}" \
                 "tooltest_ran"
        command = f"touch {marker}"
        tool_use_id = self.session.new_tool_use_id()
        self.say(f"● Bash({command})")
        self.hooks.fire("PreToolUse", self.session.tool_event(
            "PreToolUse", command, "fake tool call", tool_use_id), match="Bash")
        verdict = self.session.permission(fake_opencode.SHELL_TOOL, "ask")
        if verdict == "deny":
            self.say("  ⎿ denied by the permission rules")
            return
        if verdict == "allow":
            self._ran(command, tool_use_id)
            return
        if self.session.provider == "opencode":  # the question is drawn with its event
            self.say("  △ Permission required")
        self.hooks.fire("PermissionRequest", self.session.tool_event(
            "PermissionRequest", command, "fake tool call", tool_use_id), match="Bash")
        if self.session.provider == "claude":
            self.hooks.fire("Notification", self.session.notification(
                "Claude needs your permission", "permission_prompt"))
        elif self.session.provider == "gemini":
            self.hooks.fire("Notification", self.session.notification(
                "Tool Confirm Shell Command requires execution", fake_gemini.PERMISSION_TYPE))
        # Like the real CLIs, wait for the person: the needs-input badge lasts until
        # they answer in the pane.
        answer = self.ask(f"  Allow Bash({command})? [y/n] ") if self.ask else None
        if answer is None or answer.strip().lower() not in ("", "y", "yes"):
            self.say("  ⎿ permission denied")
            return
        self.say("  ⎿ permission granted")
        self._ran(command, tool_use_id)

    def _ran(self, command: str, tool_use_id: str) -> None:
        self.hooks.fire("PostToolUse", self.session.tool_event(
            "PostToolUse", command, "fake tool call", tool_use_id), match="Bash")

    def _noticed_tool(self) -> None:
        """A command auto mode checks, with the notice Claude Code 2.1.332 shows before
        the first checked action when its requests go through a gateway: the turn waits
        on it (no Stop) until the person presses Enter; its hook is the only word of it."""
        command = "python3 -c \"open('notice_ran', 'w')\""
        tool_use_id = self.session.new_tool_use_id()
        self.say(f"● Bash({command})")
        self.hooks.fire("PreToolUse", self.session.tool_event(
            "PreToolUse", command, "a checked command", tool_use_id), match="Bash")
        if self.read_key is not None:
            self.hooks.fire("Notification", self.session.notification(
                NOTICE_MESSAGE, "agent_needs_input"))
            if not show_notice(self.read_key, self.write, NOTICE_TITLE):
                self.say("  ⎿ Cancelled at the classifier billing notice")
                return
        self.say("  ⎿ ran")
        self.hooks.fire("PostToolUse", self.session.tool_event(
            "PostToolUse", command, "a checked command", tool_use_id), match="Bash")

    def _read_messages(self) -> None:
        code, stdout, _ = self._agent_tool("message_poll", {})
        try:
            messages = json.loads(stdout)["messages"] if code == 0 else []
        except (ValueError, KeyError, TypeError):
            messages = []
        for message in messages:
            self.say(f"  message {message['message_id']}: {message['text']}")
            self._agent_tool("message_ack", {"id": int(message["message_id"])})

    def _agent_tool(self, tool: str, arguments: dict[str, object], *,
                    show_instructions: bool = False) -> tuple[int, str, str]:
        """One agent tool call: over the configured MCP server (fake Codex with
        ``-c mcp_servers.switchboard...``; no hook fires, the fixtures hold none
        for MCP calls), else as a Bash command, with its Pre/PostToolUse hooks."""
        if self.mcp is not None:
            self.say(f"● switchboard.{tool}({json.dumps(arguments, ensure_ascii=False)})")
            if not self._tool_allowed(tool):
                return 1, "", f"the person did not allow switchboard_{tool}"
            code, stdout, stderr = self.mcp.call(tool, arguments)
            self._show(code, stdout, stderr, show_instructions)
            return code, stdout, stderr
        words = [tool.replace("_", "-")]
        for key, value in arguments.items():
            words += ["--" + key.replace("_", "-"), str(value)]
        argv = [*self.agent_command, *words, "--json"]
        command = shlex.join(argv)
        tool_use_id = self.session.new_tool_use_id()
        self.say(f"● Bash({command})")
        self.hooks.fire("PreToolUse", self.session.tool_event(
            "PreToolUse", command, "switchboard agent tool", tool_use_id), match="Bash")
        started = time.monotonic()
        code, stdout, stderr = self._run_cli(argv)
        elapsed = int((time.monotonic() - started) * 1000)
        self._show(code, stdout, stderr, show_instructions)
        response: object = {"stdout": stdout[:2000], "stderr": stderr[:2000],
                            "interrupted": False, "isImage": False, "noOutputExpected": False}
        if self.session.provider == "codex":
            response = stdout[:2000]
        self.hooks.fire("PostToolUse", self.session.tool_event(
            "PostToolUse", command, "switchboard agent tool", tool_use_id,
            tool_response=response, duration_ms=elapsed), match="Bash")
        return code, stdout, stderr

    def _tool_allowed(self, tool: str) -> bool:
        """OpenCode asks before an MCP tool its rules say ``ask`` for (``deny``: refused
        unasked); the other CLIs' launches allow Switchboard's tools."""
        session = self.session
        key = f"switchboard_{tool}"
        verdict = session.permission(key, "allow")
        if verdict == "allow" or not isinstance(session, OpencodeSession):
            return True
        if verdict == "deny":
            self.say(f"  ⎿ {key} denied by the permission rules")
            return False
        call_id = session.new_tool_use_id()
        self.say(f"  △ Permission required: Call tool {key}")
        self.hooks.fire("PermissionRequest", session.tool_permission(key, call_id, None))
        answer = self.ask(f"  Allow {key}? [y/n] ") if self.ask else None
        allowed = answer is not None and answer.strip().lower() in ("", "y", "yes")
        self.hooks.fire("PermissionRequest", session.tool_permission(
            key, call_id, "once" if allowed else "reject"))
        if not allowed:
            self.say("  ⎿ permission denied")
        return allowed

    def _run_cli(self, argv: list[str]) -> tuple[int, str, str]:
        try:
            done = subprocess.run(argv, capture_output=True, env=self.env, check=False,
                                  stdin=subprocess.DEVNULL, timeout=AGENT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return -1, "", str(exc)
        return (done.returncode, done.stdout.decode("utf-8", "replace"),
                done.stderr.decode("utf-8", "replace"))

    def _show(self, code: int, stdout: str, stderr: str, show_instructions: bool) -> None:
        if code != 0:
            last = (stderr.strip().splitlines() or [stdout.strip()])[-1]
            self.say(f"  ⎿ Error (exit {code}): {last[:300]}")
        else:
            self.say("  ⎿ " + _tool_summary(stdout, show_instructions))


def _split_pair(text: str) -> tuple[str, str]:
    first, _, second = text.partition("::")
    return first.strip(), second.strip()


def _tool_summary(stdout: str, show_instructions: bool) -> str:
    try:
        document = json.loads(stdout)
    except ValueError:
        return stdout.strip()[:500] or "(no output)"
    if show_instructions and isinstance(document, dict) and "instructions" in document:
        instructions = document["instructions"]
        if isinstance(instructions, list):
            instructions = "\n    ".join(str(item) for item in instructions)
        return f"Instructions: {instructions}"
    return json.dumps(document, sort_keys=True)[:500]


# --- command line ------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    """The parsed command line: the emulated CLI's meaning plus the fake's own knobs."""

    provider: str
    prompt: str | None
    session_id: str | None
    """Claude: ``--session-id``; None for a new Codex thread."""
    resume: str | None
    """The session / thread id to resume."""
    fork_from: str | None
    """The session / thread a new one forks (Claude ``--resume ID --fork-session``,
    Codex ``fork ID``): its messages start the new transcript."""
    settings: str | None
    overrides: dict
    print_mode: bool
    show_version: bool
    show_help: bool
    fake_version: str | None
    hook_command: str | None
    agent_command: str
    no_stop_on: tuple[str, ...]
    session_end: str
    reply: str
    mcp_configs: tuple[str, ...] = ()
    """Claude: ``--mcp-config`` values; its stdio servers start with the session."""
    startup_dialog: str | None = None
    """A start-up dialog to show first, as Claude Code 2.1.300+ does once ("Make auto
    mode your default permission mode?"): a two-option list, answered with arrows and
    Enter; until then typed text and pastes are ignored and an initial prompt waits."""


def start_mcp_servers(configs: Sequence[str], env: dict[str, str]) -> list[subprocess.Popen]:
    """Start each configured stdio MCP server as a child, as Claude Code does at start-up,
    and list its tools (initialize, initialized, tools/list) without waiting for the
    answers. The fake calls its agent tools through its own path; this makes the
    servers exist exactly where the real CLI has them (hooks that wait for them)."""
    started: list[subprocess.Popen] = []
    hello = "".join(json.dumps(m) + "\n" for m in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "fake-claude", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).encode()
    for config in configs:
        document = fake_argv.load_json_or_file(config) or {}
        servers = document.get("mcpServers")
        for spec in (servers.values() if isinstance(servers, dict) else ()):
            if isinstance(spec, dict) and (remote := HttpServer.from_claude_spec(spec)):
                _list_in_background(remote)
                continue
            if not isinstance(spec, dict) or not isinstance(spec.get("command"), str):
                continue
            env_spec = spec.get("env")
            extra = env_spec if isinstance(env_spec, dict) else {}
            try:
                proc = subprocess.Popen(
                    [spec["command"], *[str(a) for a in spec.get("args", [])]],
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, env={**env, **{str(k): str(v)
                                                             for k, v in extra.items()}})
                assert proc.stdin is not None
                proc.stdin.write(hello)
                proc.stdin.flush()
            except OSError:
                continue  # like the CLI: a server that does not start is left out
            started.append(proc)
    return started


def _list_in_background(server: HttpServer) -> None:
    """Claude Code connects an HTTP MCP server in the background at start-up; a refusal
    (401, 403) or no answer leaves the session without that server's tools, no more."""
    def connect() -> None:
        with contextlib.suppress(HttpRefused, OSError, ValueError):
            server.list_tools()

    threading.Thread(target=connect, name="fake-mcp-http", daemon=True).start()


def stop_mcp_servers(servers: Sequence[subprocess.Popen]) -> None:
    for proc in servers:
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # the server ends on EOF
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()


def parse_args(argv: Sequence[str]) -> Launch:
    """Read ``argv`` as the real CLI would (``core.providers.fake.argv``); raises
    ArgvError with the real message and exit code for what the real one refuses."""
    cli = fake_argv.parse(list(argv))
    overrides: dict = {}
    if cli.provider == "codex":
        try:
            overrides = parse_overrides(cli.list_of("config"))
        except OverrideError as exc:
            raise fake_argv.ArgvError(f"Error parsing -c overrides: {exc}", 1) from exc
    resume: str | None = None
    fork_from: str | None = None
    if cli.provider == "claude" and isinstance(cli.get("resume"), str):
        resume = str(cli.get("resume"))
        if cli.get("fork_session"):
            resume, fork_from = None, resume
    elif cli.provider == "codex" and cli.resume:
        resume = cli.session_id
    elif cli.provider == "codex" and cli.fork:
        fork_from = cli.session_id
    elif cli.provider == "gemini" and isinstance(cli.get("resume"), str):
        resume = str(cli.get("resume"))
    elif cli.provider == "opencode" and cli.session_id is not None:
        resume, fork_from = (None, cli.session_id) if cli.get("fork") else \
            (cli.session_id, None)
    settings = cli.get("settings")
    return Launch(
        provider=cli.provider, prompt=cli.prompt,
        session_id=cli.session_id if cli.provider in ("claude", "gemini") else None,
        resume=resume, fork_from=fork_from,
        settings=settings if isinstance(settings, str) else None,
        overrides=overrides, print_mode=bool(cli.get("print")),
        show_version=bool(cli.get("version")), show_help=bool(cli.get("help")),
        fake_version=_text(cli.get("fake_version")), hook_command=_text(cli.get("hook_command")),
        agent_command=_text(cli.get("agent_command")) or "switchboard agent",
        no_stop_on=tuple(cli.list_of("no_stop_on")),
        session_end=_text(cli.get("session_end")) or "auto",
        reply=_text(cli.get("reply")) or DEFAULT_REPLY,
        startup_dialog=_text(cli.get("startup_dialog")),
        mcp_configs=tuple(cli.list_of("mcp_config")) if cli.provider == "claude" else ())


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


USAGE = {
    "claude": "Usage: claude [options] [command] [prompt]  (fake_agent: offline stand-in)",
    "codex": "Usage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] resume [SESSION_ID] "
             "[PROMPT]\n       codex [OPTIONS] fork [SESSION_ID] [PROMPT]  (fake_agent: "
             "offline stand-in)",
    "gemini": "Usage: gemini [options] [command]  (fake_agent: offline stand-in)",
    "opencode": "opencode [project]  (fake_agent: offline stand-in)",
}
EMULATED = {"claude": (fake_argv.CLAUDE_OPTIONS, fake_argv.CLAUDE_COMMANDS),
            "codex": (fake_argv.CODEX_OPTIONS, fake_argv.CODEX_COMMANDS),
            "gemini": (fake_argv.GEMINI_OPTIONS, fake_argv.GEMINI_COMMANDS),
            "opencode": (fake_argv.OPENCODE_OPTIONS, fake_argv.OPENCODE_COMMANDS)}
NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI",
         "opencode": "OpenCode"}

def emulated_help(provider: str) -> str:
    """The usage, options and subcommands of the emulated CLI, laid out as its own help
    is, so a check that reads ``--help`` (``core.providers.contract``) sees what the
    fake accepts."""
    if provider == "opencode":
        return fake_argv.opencode_help()
    options, commands = EMULATED[provider]
    lines = [USAGE[provider], "", "Options:"]
    lines += [f"  {opt.flags}" for opt in options if opt not in fake_argv.FAKE_OPTIONS]
    lines += ["", "Commands:"]
    lines += [f"  {command}  (emulated)" for command in commands]
    return "\n".join(lines)


FAKE_HELP = """fake_agent's own options (anywhere an option may go):
  --provider claude|codex|gemini|opencode   which CLI to emulate (required)
  --hook-command CMD        hooks run as: CMD --provider P EVENT
  --agent-command CMD       agent tools run as: CMD transition-claim --json, ...
  --no-stop-on WORD         a prompt containing WORD ends without Stop (repeatable)
  --session-end auto|always|never   fire SessionEnd at exit (auto: claude yes)
  --reply TEXT              the reply line
  --fake-version V          the version to report"""


def _gemini_refusal(args: Launch, env: dict[str, str], cwd: str,
                    initial_prompt: str | None) -> str | None:
    """What Gemini CLI 0.61.0 refuses before its screen (``core.providers.fake.gemini``)."""
    if fake_gemini.in_ci(env) and initial_prompt is None:
        return fake_gemini.no_ci_input_message()
    if args.session_id is not None and fake_gemini.session_exists(cwd, env, args.session_id):
        return (f'Error starting session: Session ID "{args.session_id}" already exists. Use '
                "--resume to resume it, or provide a different ID.")
    if args.resume is not None and not fake_gemini.session_exists(cwd, env, args.resume):
        return fake_gemini.unknown_session_message(cwd, env, args.resume)
    return None


def _print_prompt(launch: Launch) -> str | None:
    """``-p``: the prompt argument, else stdin (as Claude Code reads it)."""
    if launch.prompt:
        return launch.prompt
    if os.isatty(0):
        return None
    return sys.stdin.read().strip() or None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except fake_argv.ArgvError as exc:
        print(exc.message, file=sys.stderr)
        return exc.exit_code
    version = args.fake_version or DEFAULT_VERSIONS[args.provider]
    if args.show_help:  # OpenCode writes its help to stderr
        print(emulated_help(args.provider) + "\n\n" + FAKE_HELP,
              file=sys.stderr if args.provider == "opencode" else sys.stdout)
        return 0
    if args.show_version:
        print(VERSION_LINES[args.provider].format(version=version))
        return 0
    initial_prompt = args.prompt
    if args.print_mode:
        initial_prompt = _print_prompt(args)
        if initial_prompt is None:
            print("Error: Input must be provided either through stdin or as a prompt argument "
                  "when using --print", file=sys.stderr)
            return 1

    def write(text: str) -> None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError:
            pass  # the pane is gone; keep going so SessionEnd still fires

    def report(text: str) -> None:
        write(text + "\n")

    env = dict(os.environ)
    cwd = os.getcwd()
    if args.provider == "claude":
        env.setdefault("CLAUDE_PROJECT_DIR", cwd)
        session_id = args.session_id or args.resume or str(uuid.uuid4())
    elif args.provider == "gemini":
        session_id = args.session_id or args.resume or str(uuid.uuid4())
        refused = _gemini_refusal(args, env, cwd, initial_prompt)
        if refused is not None:
            print(refused, file=sys.stderr)
            return fake_gemini.SESSION_EXISTS_EXIT
        if fake_gemini.in_ci(env):  # is-in-ci: headless, the prompt runs and it ends
            args = replace(args, print_mode=True)
    elif args.provider == "opencode":
        session_id = args.resume or ""  # made at the first prompt
        for asked in (args.resume, args.fork_from):
            refused = fake_opencode.refusal(asked) if asked is not None else None
            if refused is not None:
                print(refused, file=sys.stderr)
                return 1
    else:
        session_id = args.resume or uuid7()
    if args.provider == "claude" and args.settings and \
            fake_argv.load_json_or_file(args.settings) is None:
        report(f"  ⎿ settings ignored (not a JSON object): {args.settings}")
    opencode_config = fake_opencode.config(env, cwd) if args.provider == "opencode" else {}
    session: Session
    if args.provider == "gemini":
        session = GeminiSession(args.provider, session_id, cwd, resumed=bool(args.resume),
                                chat_env=env)
    elif args.provider == "opencode":
        session = OpencodeSession(args.provider, session_id, cwd, resumed=bool(args.resume),
                                  document=opencode_config, fork_source=args.fork_from)
    else:
        session = Session(args.provider, session_id, cwd,
                          resumed=bool(args.resume or args.fork_from))
    carried = 0
    if args.fork_from is not None and args.provider != "opencode":
        try:
            carried = transcript.fork(args.provider, args.fork_from, session_id, cwd,
                                      session.transcript_path)
        except transcript.NoSavedSession as exc:
            print(exc.message, file=sys.stderr)
            return 1
    server = StdioServer.from_config(args.overrides, "switchboard")
    http_server = HttpServer.from_codex_config(args.overrides, "switchboard", env)
    client: McpClient | HttpMcpClient | None = McpClient(server, env) \
        if server is not None else None
    if args.provider == "gemini":
        http_server = fake_gemini.http_server(fake_gemini.settings(env), "switchboard", env)
    if args.provider == "opencode":
        http_server = fake_opencode.agent_tools(opencode_config)
    if http_server is not None:
        client = HttpMcpClient(http_server)
        if isinstance(http_server, str):
            report(f"  ⚠ {http_server}")
    agent = FakeAgent(
        session=session,
        hooks=build_runner(args, env, report, opencode_config),
        agent_command=tuple(shlex.split(args.agent_command)),
        no_stop_on=tuple(args.no_stop_on),
        reply=args.reply,
        env=env,
        write=write,
        mcp=client,
    )
    servers = start_mcp_servers(args.mcp_configs, env)
    fire_end = args.session_end == "always" or (
        args.session_end == "auto" and args.provider in ("claude", "gemini")
    )

    def closed(signum: int, frame: object) -> None:
        raise SessionClosed(signum)

    signal.signal(signal.SIGHUP, closed)
    signal.signal(signal.SIGTERM, closed)
    name = NAMES[args.provider]
    report(f"✻ Fake {name} {version} (offline stand-in)")
    report(f"  session: {session_id or '(made at the first prompt)'}"
           + (" (resumed)" if args.resume else ""))
    if args.fork_from is not None:
        report(f"  forked from {args.fork_from}: {carried} earlier messages")
    report(f"  cwd: {cwd}")
    if args.provider == "opencode":
        report("  tab agents  ctrl+p commands")
    end_reason = "prompt_input_exit"
    with PromptReader(sys.stdin.fileno(), write) as reader:
        if not args.print_mode:
            def ask(question: str) -> str | None:
                write(question)
                return reader.read_line()
            agent.ask = ask
            agent.read_key = reader.read_key
        try:
            agent.hooks.fire("SessionStart", session.session_start())
            if args.startup_dialog and not args.print_mode:
                chosen = answer_dialog(reader, write, args.startup_dialog)
                if chosen is None:
                    raise SessionClosed(0)
                report(f"  ✓ {chosen}")
            if initial_prompt is not None:
                report(f"> {initial_prompt}")
                agent.turn(initial_prompt)
            while not args.print_mode:
                write("> ")
                line = reader.read_line()
                if line is None or line.strip() == "/exit":
                    break
                if line.strip():
                    agent.turn(line)
                if agent.notice is not None:
                    chosen = answer_dialog(reader, write, agent.notice)
                    agent.notice = None
                    if chosen is None:
                        break
                    report(f"  ✓ {chosen}")
        except SessionClosed:
            end_reason = "other"
        except (KeyboardInterrupt, OSError):
            end_reason = "other"  # Ctrl-C without a TTY, or the terminal went away
        finally:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if fire_end:
                agent.hooks.fire("SessionEnd", session.session_end(end_reason))
            stop_mcp_servers(servers)
    report("Bye.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
