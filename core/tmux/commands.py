"""Rendering of guarded tmux command lists.

A guard makes a physical precondition and the mutation one tmux queue: the
condition is a tmux format evaluated by `if-shell -F -t PANE` in the server
at the moment the commands run, so nothing can change between check and act.
Nested guards are written in tmux's own `{ ... }` block syntax; every token
inside is single-quoted, so only ids, option names and fixed words may
appear there (argv-level commands carry arbitrary data instead).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from core.tmux.errors import PaneNotFound
from core.tmux.runner import TmuxCommand

OK_MARKER = "SB_OK"
REFUSED_PREFIX = "SB_REFUSED:"
MISSING_PREFIX = "missing_"

_LABEL = re.compile(r"^[a-z_0-9]+$")
_PANE_ID = re.compile(r"^%\d+$")


def quote_token(token: str) -> str:
    """Single-quote a token for tmux's command parser (no escapes exist inside)."""
    if "'" in token or "\n" in token or "\r" in token:
        raise ValueError(f"token cannot be placed inside a tmux guard: {token!r}")
    return f"'{token}'"


def render(commands: Sequence[TmuxCommand]) -> str:
    """Render commands as one tmux command string, `;`-separated."""
    return " ; ".join(" ".join(quote_token(part) for part in command) for command in commands)


@dataclass(frozen=True)
class Check:
    """A tmux format that must be true in the context of `target` (a pane id)."""

    target: str
    condition: str
    refusal: str

    def __post_init__(self) -> None:
        if not _PANE_ID.match(self.target):
            raise ValueError(f"guards target exact pane ids, not {self.target!r}")
        if not _LABEL.match(self.refusal):
            raise ValueError(f"refusal label must be lower_snake: {self.refusal!r}")


def ok_command() -> TmuxCommand:
    return ("display-message", "-p", OK_MARKER)


def refusal_command(label: str) -> TmuxCommand:
    return ("display-message", "-p", REFUSED_PREFIX + label)


def guarded(checks: Sequence[Check], then: Sequence[TmuxCommand]) -> TmuxCommand:
    """One argv `if-shell` that runs `then` + an OK marker only if every check holds.

    The first failing check prints `SB_REFUSED:<label>` and nothing else runs.
    `if-shell -t` does not fail on a vanished pane (it evaluates the format
    with no pane at all), so each target is first checked to exist and
    refused as `missing_<n>` for pane `%n`.
    """
    if not checks:
        raise ValueError("a guard needs at least one check")
    targets = list(dict.fromkeys(check.target for check in checks))
    checks = [
        *(Check(t, equals("#{pane_id}", t), MISSING_PREFIX + t[1:]) for t in targets),
        *checks,
    ]
    body = render([*then, ok_command()])
    for check in reversed(checks[1:]):
        body = (
            f"if-shell -F -t {quote_token(check.target)} {quote_token(check.condition)} "
            f"{{ {body} }} {{ {render([refusal_command(check.refusal)])} }}"
        )
    first = checks[0]
    return (
        "if-shell", "-F", "-t", first.target, first.condition,
        body, render([refusal_command(first.refusal)]),
    )


def gated(checks: Sequence[Check], then: Sequence[TmuxCommand]) -> list[TmuxCommand]:
    """`then` at argv level, run only if every check holds: for commands carrying data.

    A `guarded` body is single-quoted tokens inside tmux blocks, so arbitrary
    data (a command line, environment values, paths) cannot go there. Here the
    guard only creates a uniquely named buffer, and deleting it is the first
    argv-level command: after a refusal the buffer does not exist, the delete
    fails, and tmux runs nothing after it in the batch (the rule the identity
    guard relies on). So a refusal stops the whole batch; run it with
    `run_guarded(..., refusal_stops=True)` and read the labels with `outcomes`.
    """
    sentinel = f"sb-gate-{uuid.uuid4().hex}"
    return [guarded(checks, [("set-buffer", "-b", sentinel, "--", "1")]),
            ("delete-buffer", "-b", sentinel), *then]


def both(*conditions: str) -> str:
    """tmux format conjunction of any number of conditions."""
    if not conditions:
        raise ValueError("no conditions")
    result = conditions[-1]
    for condition in reversed(conditions[:-1]):
        result = f"#{{&&:{condition},{result}}}"
    return result


def equals(format_expr: str, value: str) -> str:
    """tmux format `==`; `value` must be a plain token (no `,` `}` `#`)."""
    if any(ch in value for ch in ",}{#"):
        raise ValueError(f"value cannot appear inside a tmux format: {value!r}")
    return f"#{{==:{format_expr},{value}}}"


def outcome(stdout: Sequence[str]) -> str | None:
    """`"ok"`, the refusal label, or None when the guard printed nothing.

    Raises PaneNotFound when the refusal was a vanished target pane.
    """
    found = outcomes(stdout, missing_raises=False)
    if found and found[0].startswith(MISSING_PREFIX):
        raise _pane_not_found(found[0])
    return found[0] if found else None


def outcomes(stdout: Sequence[str], *, missing_raises: bool = True) -> list[str]:
    """Every guard's `"ok"` or refusal label, in batch order (several guards in one batch).

    A vanished target pane raises PaneNotFound, unless `missing_raises` is off
    (then its label `missing_<n>` is listed like any refusal).
    """
    found: list[str] = []
    for line in stdout:
        if line == OK_MARKER:
            found.append("ok")
        elif line.startswith(REFUSED_PREFIX):
            label = line[len(REFUSED_PREFIX):]
            if missing_raises and label.startswith(MISSING_PREFIX):
                raise _pane_not_found(label)
            found.append(label)
    return found


def _pane_not_found(label: str) -> PaneNotFound:
    pane_id = "%" + label[len(MISSING_PREFIX):]
    return PaneNotFound(
        f"tmux pane {pane_id} no longer exists; nothing was changed. Reconcile the view.",
        pane_id=pane_id,
    )
