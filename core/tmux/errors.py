"""tmux adapter errors: each names the physical precondition that failed.

The engine maps them to recoveries (a restarted server, a vanished pane) or
refuses the transition; none of them is ever retried blindly.
"""

from __future__ import annotations

from core.model.errors import TmuxError


class TmuxUnavailable(TmuxError):
    """No tmux server answers on the socket."""

    code = "tmux_unavailable"

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail
        """What tmux itself printed, without the advice of ``message``."""


class ServerIdentityMismatch(TmuxError):
    """The server on the socket is not the one whose locators we stored.

    A restarted server reuses socket paths and pane ids (%0, %1, ...), so every
    stored locator is invalid once socket path, pid or start time disagree.
    """

    code = "tmux_server_identity_mismatch"

    def __init__(self, message: str, *, expected: object = None, actual: object = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class TargetNotFound(TmuxError):
    """A session, window or pane named by an exact locator does not exist."""

    code = "tmux_target_not_found"


class PaneNotFound(TargetNotFound):
    code = "tmux_pane_not_found"

    def __init__(self, message: str, *, pane_id: str | None = None) -> None:
        super().__init__(message)
        self.pane_id = pane_id


class UnmanagedPane(TmuxError):
    """The pane is not the exact launch-owned pane we were told about."""

    code = "tmux_pane_unmanaged"


class PaneNotFenced(TmuxError):
    """Control input refused: the pane accepts client input (not `select-pane -d`)."""

    code = "tmux_pane_not_fenced"


class PlacementRefused(TmuxError):
    """A move's physical precondition failed (target not parked, main not in the view)."""

    code = "tmux_placement_refused"


class TopologyConflict(TmuxError):
    """The server holds a shape Switchboard never builds (e.g. one view in two windows)."""

    code = "tmux_topology_conflict"


class TmuxNotInstalled(TmuxError):
    """No tmux binary to run: says nothing about the server, whose panes may live on.

    Not a ``TmuxUnavailable``: that one means the server is gone and its pane
    locators are invalid, which a tmux being upgraded in place must not imply.
    """

    code = "tmux_not_installed"


class TmuxCommandFailed(TmuxError):
    """tmux reported an error that none of the specific errors explains."""

    code = "tmux_command_failed"

    def __init__(self, message: str, *, stderr: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.stderr = stderr
