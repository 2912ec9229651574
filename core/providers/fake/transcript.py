"""The fake agent's conversation file, where the real CLI keeps its own.

Claude Code appends each message to ``~/.claude/projects/<cwd>/<session>.jsonl``,
Codex to ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl``; a resumed
session appends to its file, and a fork (``claude --resume ID --fork-session``,
``codex fork ID``) starts a new file holding the parent's messages, the parent's
file untouched. The fake does the same with lines of the same outer shape (no model
usage in them, so the usage reader counts nothing), so a test reads a fork's
transcript and finds the parent's earlier messages there.

Never in the person's own ``~/.claude`` or ``~/.codex``: a fake conversation there
would be offered by the real CLI's resume picker. The same layout lives under the
fake's own folder instead: ``$SWITCHBOARD_HOME/fake-agent`` (each test's and the
demo's home has its own), else ``~/.cache/switchboard-fake-agent``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

MAX_READ_BYTES = 8 * 1024 * 1024


def root() -> Path:
    """Where the fake's transcripts live (the stand-in for the CLIs' HOME)."""
    home = os.environ.get("SWITCHBOARD_HOME")
    if home:
        return Path(home) / "fake-agent"
    return Path.home() / ".cache" / "switchboard-fake-agent"


def stored(transcript_path: str) -> Path:
    """The fake's own file for the path the CLI would use (under HOME)."""
    path = Path(transcript_path)
    try:
        return root() / path.relative_to(Path.home())
    except ValueError:
        return root() / path.name


class NoSavedSession(Exception):
    """The session to fork has no transcript here: the real CLI's refusal and exit code."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def claude_line(session_id: str, role: str, text: str) -> dict:
    content: object = text if role == "user" else [{"type": "text", "text": text}]
    return {"type": role, "sessionId": session_id, "uuid": str(uuid.uuid4()),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "message": {"role": role, "content": content}}


def codex_line(role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "type": "response_item",
            "payload": {"type": "message", "role": role, "content": [{"type": kind,
                                                                       "text": text}]}}


def append(path: str, lines: list[dict]) -> None:
    """Append whole lines (0600 when created), as the CLI writes as it goes."""
    target = stored(path)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(target, "a", encoding="utf-8", opener=_private) as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def messages(path: Path) -> list[tuple[str, str]]:
    """(role, text) of each message line of a transcript, in order."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_READ_BYTES)
    found: list[tuple[str, str]] = []
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict):
            continue
        message = line.get("message") if "message" in line else line.get("payload")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            found.append((message["role"], content))
        elif isinstance(content, list):
            text = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            found.append((message["role"], text))
    return found


def find(provider: str, session_id: str, cwd: str) -> Path | None:
    """The fake's transcript of ``session_id``, or None."""
    home = root()
    if provider == "claude":
        own = home / ".claude" / "projects" / cwd.replace("/", "-") / f"{session_id}.jsonl"
        if own.is_file():
            return own
        return next((p for p in (home / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
                     if p.is_file()), None)
    return next((p for p in (home / ".codex" / "sessions").glob(f"*/*/*/rollout-*-{session_id}"
                                                                   ".jsonl") if p.is_file()), None)


def fork(provider: str, parent: str, session_id: str, cwd: str, into: str) -> int:
    """Start ``into`` with the parent's messages; how many were carried over.

    Raises NoSavedSession (the real CLI's words) when the parent has no transcript."""
    source = find(provider, parent, cwd)
    if source is None:
        raise NoSavedSession(f"No conversation found with session ID: {parent}"
                             if provider == "claude" else
                             f"No saved session found with ID {parent}.")
    carried = messages(source)
    lines = [claude_line(session_id, role, text) if provider == "claude"
             else codex_line(role, text) for role, text in carried]
    if provider == "codex":
        lines.insert(0, {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         "type": "session_meta",
                         "payload": {"id": session_id, "forked_from_id": parent, "cwd": cwd}})
    append(into, lines)
    return len(carried)
