"""The fake agent as Gemini CLI 0.61.0: its hook names and payloads, settings, refusals.

What differs from the other two, each as the real CLI does it (``core.providers.gemini``,
``tests/fixtures/hooks/gemini-0.61.0.tsv``):

* **Hooks** come from ``$GEMINI_CLI_HOME/.gemini/settings.json`` (a Switchboard launch's
  own home; ``hooks.<Event>`` groups, timeouts in milliseconds). Without GEMINI_CLI_HOME
  the fake reads no settings (never the person's ``~/.gemini``) and falls back to
  ``--hook-command`` or ``switchboard hook`` as for the others.
* **Events**: BeforeAgent for a prompt, BeforeTool/AfterTool around a tool, a
  Notification ``ToolPermission`` for the permission question, AfterAgent at the turn's
  end, SessionEnd at exit. No PermissionRequest and no subagent events; no payload
  carries a turn id. The shell tool is ``run_shell_command``.
* **Agent tools** from ``mcpServers.switchboard`` of the same settings: ``httpUrl`` and
  ``headers`` whose ``$NAME`` / ``${NAME}`` are expanded from the environment, as the
  CLI expands every settings value.
* **Refusals** (0.61.0's words, exit 42, ``ExitCodes.FATAL_INPUT_ERROR``): in an
  environment that says CI (``CI``, ``CONTINUOUS_INTEGRATION``, any ``CI_*``) the
  interactive mode is off, and with no prompt it stops ("No input provided via stdin");
  ``--session-id`` of a session that exists is refused; ``--resume`` of one that does
  not is refused.
* **Record**: the chat is appended under the fake's own folder in the CLI's layout
  (``.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``), header first.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

from core.providers.fake import transcript
from core.providers.fake.mcp import HttpServer

GEMINI_VERSION = "0.61.0"
SHELL_TOOL = "run_shell_command"
EVENT_NAMES: dict[str, str | None] = {
    "UserPromptSubmit": "BeforeAgent",
    "PreToolUse": "BeforeTool",
    "PostToolUse": "AfterTool",
    "PermissionRequest": None,
    "Stop": "AfterAgent",
    "SubagentStart": None,
    "SubagentStop": None,
}
"""The fake's turn steps (Claude's names) as Gemini CLI names them; None: it sends none."""
PERMISSION_TYPE = "ToolPermission"
SESSION_EXISTS_EXIT = 42
"""``ExitCodes.FATAL_INPUT_ERROR`` of 0.61.0."""
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def event_name(event: str) -> str | None:
    return EVENT_NAMES.get(event, event)


def in_ci(env: dict[str, str]) -> bool:
    """``is-in-ci`` as Gemini CLI bundles it: CI, CONTINUOUS_INTEGRATION or any CI_*."""
    return any(name in ("CI", "CONTINUOUS_INTEGRATION") or name.startswith("CI_")
               for name in env)


def settings(env: dict[str, str]) -> dict:
    """The launch home's user settings, or {} without GEMINI_CLI_HOME (module docstring)."""
    home = env.get("GEMINI_CLI_HOME")
    if not home:
        return {}
    try:
        document = json.loads((Path(home) / ".gemini" / "settings.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def hook_groups(document: dict) -> dict:
    """``hooks`` with each timeout turned from milliseconds into seconds."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return {}
    converted: dict = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        converted[event] = [
            {**group, "hooks": [{**hook, "timeout": float(hook.get("timeout", 60000)) / 1000}
                                for hook in group.get("hooks", []) if isinstance(hook, dict)]}
            for group in groups if isinstance(group, dict)]
    return converted


def expand(value: str, env: dict[str, str]) -> str:
    return _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)


def http_server(document: dict, name: str, env: dict[str, str]) -> HttpServer | None:
    """``mcpServers.<name>`` when it is an HTTP server (``httpUrl``), values expanded."""
    servers = document.get("mcpServers")
    entry = servers.get(name) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("httpUrl"), str):
        return None
    raw = entry.get("headers")
    headers = raw if isinstance(raw, dict) else {}
    return HttpServer(expand(entry["httpUrl"], env),
                      tuple((str(k), expand(str(v), env)) for k, v in headers.items()))


def chats_dir(cwd: str, env: dict[str, str]) -> Path:
    """The folder the CLI would write this project's chats to (under its home)."""
    home = env.get("GEMINI_CLI_HOME") or str(Path.home())
    return Path(home) / ".gemini" / "tmp" / Path(cwd).name / "chats"


def chat_path(cwd: str, env: dict[str, str], session_id: str, started: float) -> str:
    stamp = time.strftime("%Y-%m-%dT%H-%M", time.gmtime(started))
    return str(chats_dir(cwd, env) / f"session-{stamp}-{session_id[:8]}.jsonl")


def session_exists(cwd: str, env: dict[str, str], session_id: str) -> bool:
    """A chat of this session was written here before (by the fake, in its own folder)."""
    folder = transcript.stored(str(chats_dir(cwd, env) / "x")).parent
    for path in folder.glob(f"session-*-{session_id[:8]}.jsonl"):
        try:
            with open(path, encoding="utf-8") as handle:
                head = json.loads(handle.readline() or "{}")
        except (OSError, ValueError):
            continue
        if isinstance(head, dict) and head.get("sessionId") == session_id:
            return True
    return False


def header(session_id: str) -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    return {"sessionId": session_id, "projectHash": "0" * 64, "startTime": now,
            "lastUpdated": now, "kind": "main"}


def chat_line(role: str, text: str) -> dict:
    """One message as the CLI writes it (no ``tokens``: the fake uses no model)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    if role == "user":
        return {"id": str(uuid.uuid4()), "timestamp": now, "type": "user",
                "content": [{"text": text}]}
    return {"id": str(uuid.uuid4()), "timestamp": now, "type": "gemini", "content": text,
            "thoughts": [], "model": "fake-model"}


def head(session_id: str, path: str, cwd: str, event: str) -> dict:
    """Every payload's common keys, in the recorded order."""
    return {"session_id": session_id, "transcript_path": path, "cwd": cwd,
            "hook_event_name": event,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}


def no_ci_input_message() -> str:
    """Headless with nothing to run (0.61.0, exit 42)."""
    return ("No input provided via stdin. Input can be provided by piping data into gemini "
            "or using the --prompt option.")


def unknown_session_message(cwd: str, env: dict[str, str], session_id: str) -> str:
    """0.61.0's ``Error resuming session:`` line for an id it has no chat of (exit 42)."""
    if not any(transcript.stored(str(chats_dir(cwd, env) / "x")).parent.glob("session-*")):
        return "Error resuming session: No previous sessions found for this project."
    return (f'Error resuming session: Invalid session identifier "{session_id}".\n'
            f"  Searched for sessions in {chats_dir(cwd, env)}.\n  Use --list-sessions to see "
            "available sessions, then use --resume {number}, --resume {uuid}, or --resume "
            "latest.")
