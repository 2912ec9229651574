"""Domain errors: each carries a stable code and a message that says what to do next.

The CLI prints `message` and exits with `exit_code`; the navigator shows it in a
notification. Nothing here knows about SQLite or tmux.
"""

from __future__ import annotations


class SwitchboardError(Exception):
    """Base of every error a person may see."""

    code = "error"
    exit_code = 2

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class ConfigError(SwitchboardError):
    code = "config_invalid"


class RegistryUnavailable(SwitchboardError):
    """The registry cannot be opened safely; nothing was written."""

    code = "registry_unavailable"


class NotFound(SwitchboardError):
    code = "not_found"


class Conflict(SwitchboardError):
    """A precondition (revision, generation, state) no longer holds."""

    code = "conflict"


class IllegalEdge(Conflict):
    code = "illegal_edge"


class InvariantViolation(Conflict):
    code = "invariant_violation"


class RequestConflict(Conflict):
    """A request id was reused for a different semantic target."""

    code = "request_conflict"


class Unauthorized(SwitchboardError):
    code = "unauthorized"


class TmuxError(SwitchboardError):
    code = "tmux_error"


class ProviderError(SwitchboardError):
    code = "provider_error"


class EnvelopeError(SwitchboardError):
    code = "envelope_invalid"


class EnvironmentFailure(SwitchboardError):
    """The machine, not the request, stopped a write: disk full, read-only, busy.

    The message names the file, the cause and what to do; the transaction
    that hit it was rolled back, so nothing was half-written. Exit code 3
    lets a script tell "fix the machine and retry" from a refused request.
    """

    code = "environment"
    exit_code = 3
