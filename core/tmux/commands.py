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
    for line in stdout:
        if line == OK_MARKER:
            return "ok"
        if line.startswith(REFUSED_PREFIX):
            label = line[len(REFUSED_PREFIX):]
            if label.startswith(MISSING_PREFIX):
                pane_id = "%" + label[len(MISSING_PREFIX):]
                raise PaneNotFound(
                    f"tmux pane {pane_id} no longer exists; nothing was changed. "
                    "Reconcile the view.",
                    pane_id=pane_id,
                )
            return label
    return None
