"""What a shell tool run said, read from the provider's own hook payload.

``core.providers.hooks.parse_hook`` deliberately keeps no content; the session
evidence needs some: the command, its directory, its output and, when the
provider states one, its exit status. This module reads exactly those facts
from the same payload, for tool events only, and only into the session's own
evidence file (never the registry, HostState or NavigatorState).

The recorded shapes (tests/fixtures/hooks):

- Claude ``PreToolUse``/``PostToolUse``: ``tool_input.command``, top-level
  ``cwd``; ``PostToolUse`` carries ``tool_response`` {stdout, stderr,
  interrupted, ...} and ``duration_ms`` but no exit code;
  ``PostToolUseFailure`` carries ``error`` (text) and ``is_interrupt``.
- Codex ``PreToolUse``/``PostToolUse``: ``tool_input.command`` (a string or an
  argv list), ``tool_response`` a string (the output the model saw).
- OpenCode 1.18.33 ``tool.execute.before``/``after`` (plugin hooks): the command in
  ``output.args`` (before) or ``input.args`` (after); after, ``output.output`` is the
  output the model saw and ``output.metadata.exit`` the exit code. No cwd is stated.

An exit code is recorded only where the provider states it: an integer field
of the response, Codex's ``Exit code: N`` header, Claude's ``Exit code N``
first line of a failure. Otherwise it stays unknown (``exit_code`` None and
``exit_source`` None) and is never inferred from success or failure.
Stdlib only: the hook imports this on tool events.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import NamedTuple

#: Events whose payload may describe a shell command.
OPENCODE_TOOL_EVENTS = frozenset({"tool.execute.before", "tool.execute.after"})
GEMINI_TOOL_EVENTS = frozenset({"BeforeTool", "AfterTool"})
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied",
                         *OPENCODE_TOOL_EVENTS, *GEMINI_TOOL_EVENTS})
GEMINI_SHELL_TOOL = "run_shell_command"
_GEMINI_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)
_GEMINI_FAILED = re.compile(r"^(?:Signal|Error): ", re.MULTILINE)
MAX_COMMAND_CHARS = 8192
MAX_CWD_CHARS = 4096
_CODEX_EXIT = re.compile(r"\AExit code: (-?\d+)\s*$", re.MULTILINE)
_CODEX_OUTPUT = re.compile(r"^Output:\n", re.MULTILINE)
_CLAUDE_EXIT = re.compile(r"\AExit code (-?\d+)\b")


class Outcome(StrEnum):
    """What the provider says about the run: the basis for "failed, then passed"."""

    PASSED = "passed"
    FAILED = "failed"
    UNKNOWN = "unknown"


class CommandFacts(NamedTuple):
    """One shell command as its hook payload described it.

    ``stdout``/``stderr`` are separate streams where the provider separates
    them; ``combined`` is the one text a provider gave instead (Codex). A
    ``PreToolUse`` has no output and ``finished`` False.
    """

    command: str
    cwd: str
    finished: bool
    stdout: str = ""
    stderr: str = ""
    combined: str = ""
    interrupted: bool = False
    exit_code: int | None = None
    exit_source: str | None = None
    duration_ms: int | None = None
    outcome: Outcome = Outcome.UNKNOWN


def _command_text(tool_input: object) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        import shlex
        command = shlex.join(command)
    if not isinstance(command, str) or not command.strip():
        return None
    return command[:MAX_COMMAND_CHARS]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _codex_response(text: str) -> tuple[str, int | None, str | None]:
    """(output, exit code, source) from Codex's tool output text."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            document = json.loads(stripped)
        except ValueError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("output"), str):
            meta = document.get("metadata")
            code = _int(meta.get("exit_code")) if isinstance(meta, dict) else None
            return document["output"], code, "codex_metadata" if code is not None else None
    match = _CODEX_EXIT.match(text)
    if match:
        body = _CODEX_OUTPUT.search(text)
        output = text[body.end():] if body else text
        return output, int(match.group(1)), "codex_header"
    return text, None, None


def command_facts(provider: str, event: str, document: dict[str, object]) -> CommandFacts | None:
    """The command facts of one tool hook, or None when it did not run a command."""
    if event not in TOOL_EVENTS:
        return None
    if event in OPENCODE_TOOL_EVENTS:
        return _opencode_facts(provider, event, document)
    if event in GEMINI_TOOL_EVENTS:
        return _gemini_facts(provider, event, document)
    command = _command_text(document.get("tool_input"))
    if command is None:
        return None
    cwd = document.get("cwd")
    cwd = cwd[:MAX_CWD_CHARS] if isinstance(cwd, str) and cwd else "."
    if event == "PreToolUse":
        return CommandFacts(command, cwd, finished=False)
    duration = _int(document.get("duration_ms"))
    if event == "PermissionDenied":
        # never ran: auto mode's check (or a rule) refused it; the reason is the output
        reason = document.get("reason")
        reason = reason if isinstance(reason, str) and reason else "no reason given"
        return CommandFacts(command, cwd, True, combined=f"not run, denied: {reason}",
                            duration_ms=duration, outcome=Outcome.FAILED)
    if event == "PostToolUseFailure":
        error = document.get("error")
        error = error if isinstance(error, str) else ""
        match = _CLAUDE_EXIT.match(error)
        interrupted = document.get("is_interrupt") is True
        return CommandFacts(command, cwd, True, combined=error, interrupted=interrupted,
                            exit_code=int(match.group(1)) if match else None,
                            exit_source="claude_error_text" if match else None,
                            duration_ms=duration, outcome=Outcome.FAILED)
    response = document.get("tool_response")
    if isinstance(response, dict):
        stdout = response.get("stdout")
        stderr = response.get("stderr")
        code = _int(response.get("exit_code", response.get("exitCode")))
        interrupted = response.get("interrupted") is True
        facts = CommandFacts(
            command, cwd, True, stdout=stdout if isinstance(stdout, str) else "",
            stderr=stderr if isinstance(stderr, str) else "", interrupted=interrupted,
            exit_code=code, exit_source="tool_response" if code is not None else None,
            duration_ms=duration)
    elif isinstance(response, str):
        output, code, source = _codex_response(response)
        facts = CommandFacts(command, cwd, True, combined=output, exit_code=code,
                             exit_source=source, duration_ms=duration)
    else:
        facts = CommandFacts(command, cwd, True, duration_ms=duration)
    return _with_outcome(provider, facts)


def _opencode_facts(provider: str, event: str,
                    document: dict[str, object]) -> CommandFacts | None:
    """OpenCode's plugin hooks: ``{"input", "output"}`` (module docstring)."""
    given, result = document.get("input"), document.get("output")
    given = given if isinstance(given, dict) else {}
    result = result if isinstance(result, dict) else {}
    before = event == "tool.execute.before"
    command = _command_text(result.get("args") if before else given.get("args"))
    if command is None:
        return None
    if before:
        return CommandFacts(command, ".", finished=False)
    meta = result.get("metadata")
    code = _int(meta.get("exit")) if isinstance(meta, dict) else None
    output = result.get("output")
    return _with_outcome(provider, CommandFacts(
        command, ".", True, combined=output if isinstance(output, str) else "",
        exit_code=code, exit_source="opencode_metadata" if code is not None else None))


def _gemini_facts(provider: str, event: str,
                  document: dict[str, object]) -> CommandFacts | None:
    """Gemini CLI 0.61.0's BeforeTool/AfterTool of its shell tool. Its result text says
    (its own tool description): "Exit Code: Only included if non-zero", "Error" for a
    process-level error, "Signal" for a kill; so an output with none of them ran to 0."""
    if document.get("tool_name") != GEMINI_SHELL_TOOL:
        return None
    command = _command_text(document.get("tool_input"))
    if command is None:
        return None
    cwd = document.get("cwd")
    cwd = cwd[:MAX_CWD_CHARS] if isinstance(cwd, str) and cwd else "."
    if event == "BeforeTool":
        return CommandFacts(command, cwd, finished=False)
    response = document.get("tool_response")
    text = response.get("llmContent") if isinstance(response, dict) else None
    if not isinstance(text, str) or "Output:" not in text:
        return _with_outcome(provider, CommandFacts(command, cwd, True))
    match = _GEMINI_EXIT.search(text)
    failed = _GEMINI_FAILED.search(text) is not None
    code = int(match.group(1)) if match else (None if failed else 0)
    facts = CommandFacts(command, cwd, True, combined=text, exit_code=code,
                         exit_source="gemini_result_text" if code is not None else None,
                         interrupted=failed and match is None and "Signal: " in text)
    if failed and code is None:
        return facts._replace(outcome=Outcome.FAILED)
    return _with_outcome(provider, facts)


def _with_outcome(provider: str, facts: CommandFacts) -> CommandFacts:
    """An exit code decides; without one, only a provider whose PostToolUse means the
    run passed (Claude's: a non-zero exit comes as PostToolUseFailure) says so."""
    from core.providers.traits import traits

    if facts.interrupted:
        outcome = Outcome.FAILED
    elif facts.exit_code is not None:
        outcome = Outcome.PASSED if facts.exit_code == 0 else Outcome.FAILED
    elif traits(provider).post_tool_use_means_passed:
        outcome = Outcome.PASSED
    else:
        outcome = Outcome.UNKNOWN
    return facts._replace(outcome=outcome)


def prompt_text(document: dict[str, object], limit: int = 16384) -> str | None:
    """A submitted prompt's text (UserPromptSubmit; OpenCode's ``chat.message``: its
    typed text parts), bounded."""
    prompt = document.get("prompt")
    output = document.get("output")
    if prompt is None and isinstance(output, dict) and isinstance(output.get("parts"), list):
        prompt = "\n".join(part["text"] for part in output["parts"][:64]
                           if isinstance(part, dict) and part.get("type") == "text"
                           and isinstance(part.get("text"), str) and not part.get("synthetic"))
    return prompt[:limit] if isinstance(prompt, str) and prompt.strip() else None


class HookFacts(NamedTuple):
    """The registry facts the hook learned in its own transaction."""

    session_key: str
    project_id: str
    project_root: str
    frame_id: str | None
    activity: str | None
