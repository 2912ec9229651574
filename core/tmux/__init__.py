"""The tmux adapter: exact-server identity, batched commands, views and control input.

No Textual, no SQLite: the engine decides, this package moves panes and
reports what tmux observed.
"""

from core.tmux.adapter import TmuxAdapter, TmuxPort
from core.tmux.control_input import (
    CONTROL_CLAIM_TEXT,
    ControlSubmission,
    disable_input,
    enable_input,
    submit_control_line,
)
from core.tmux.errors import (
    PaneNotFenced,
    PaneNotFound,
    PlacementRefused,
    ServerIdentityMismatch,
    TargetNotFound,
    TmuxCommandFailed,
    TmuxUnavailable,
    TopologyConflict,
    UnmanagedPane,
)
from core.tmux.identity import ServerIdentity, check_identity, read_identity, verify_identity
from core.tmux.panes import (
    HOLDING_SESSION,
    PaneRole,
    PaneSnapshot,
    ServerSnapshot,
    ViewLayout,
    snapshot,
    tag_pane,
)
from core.tmux.runner import BatchOutput, TmuxRunner
from core.tmux.topology import (
    KeyBinding,
    NavigatorSpawn,
    Presented,
    create_view,
    ensure_holding_session,
    kill_surface_pane,
    launch_staged_pane,
    present,
    respawn_navigators,
    set_mode,
)

__all__ = [
    "CONTROL_CLAIM_TEXT", "HOLDING_SESSION", "BatchOutput", "ControlSubmission", "KeyBinding",
    "NavigatorSpawn", "PaneNotFenced",
    "PaneNotFound", "PaneRole", "PaneSnapshot", "PlacementRefused", "Presented",
    "ServerIdentity", "ServerIdentityMismatch", "ServerSnapshot", "TargetNotFound",
    "TmuxAdapter", "TmuxCommandFailed", "TmuxPort", "TmuxRunner", "TmuxUnavailable",
    "TopologyConflict", "UnmanagedPane", "ViewLayout", "check_identity", "create_view",
    "disable_input", "enable_input", "ensure_holding_session", "kill_surface_pane",
    "launch_staged_pane", "present", "read_identity", "respawn_navigators", "set_mode", "snapshot",
    "submit_control_line", "tag_pane", "verify_identity",
]
