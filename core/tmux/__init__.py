"""The tmux adapter: exact-server identity, batched commands, views and control input.

No Textual, no SQLite: the engine decides, this package moves panes and
reports what tmux observed.

The names below load their module on first use (PEP 562): a reader that needs
one module (the broker's delivery needs the guarded-command helpers) does not
import the whole adapter, which every navigator would otherwise carry.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.model.defaults import HOLDING_SESSION
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
        TmuxNotInstalled,
        TmuxUnavailable,
        TopologyConflict,
        UnmanagedPane,
    )
    from core.tmux.identity import ServerIdentity, check_identity, read_identity, verify_identity
    from core.tmux.panes import (
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

#: exported name -> the module that defines it
_HOME: dict[str, str] = {
    "BatchOutput": "core.tmux.runner",
    "CONTROL_CLAIM_TEXT": "core.tmux.control_input",
    "ControlSubmission": "core.tmux.control_input",
    "HOLDING_SESSION": "core.model.defaults",
    "KeyBinding": "core.tmux.topology",
    "NavigatorSpawn": "core.tmux.topology",
    "PaneNotFenced": "core.tmux.errors",
    "PaneNotFound": "core.tmux.errors",
    "PaneRole": "core.tmux.panes",
    "PaneSnapshot": "core.tmux.panes",
    "PlacementRefused": "core.tmux.errors",
    "Presented": "core.tmux.topology",
    "ServerIdentity": "core.tmux.identity",
    "ServerIdentityMismatch": "core.tmux.errors",
    "ServerSnapshot": "core.tmux.panes",
    "TargetNotFound": "core.tmux.errors",
    "TmuxAdapter": "core.tmux.adapter",
    "TmuxCommandFailed": "core.tmux.errors",
    "TmuxNotInstalled": "core.tmux.errors",
    "TmuxPort": "core.tmux.adapter",
    "TmuxRunner": "core.tmux.runner",
    "TmuxUnavailable": "core.tmux.errors",
    "TopologyConflict": "core.tmux.errors",
    "UnmanagedPane": "core.tmux.errors",
    "ViewLayout": "core.tmux.panes",
    "check_identity": "core.tmux.identity",
    "create_view": "core.tmux.topology",
    "disable_input": "core.tmux.control_input",
    "enable_input": "core.tmux.control_input",
    "ensure_holding_session": "core.tmux.topology",
    "kill_surface_pane": "core.tmux.topology",
    "launch_staged_pane": "core.tmux.topology",
    "present": "core.tmux.topology",
    "read_identity": "core.tmux.identity",
    "respawn_navigators": "core.tmux.topology",
    "set_mode": "core.tmux.topology",
    "snapshot": "core.tmux.panes",
    "submit_control_line": "core.tmux.control_input",
    "tag_pane": "core.tmux.panes",
    "verify_identity": "core.tmux.identity",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


__all__ = [
    "CONTROL_CLAIM_TEXT", "HOLDING_SESSION", "BatchOutput", "ControlSubmission", "KeyBinding",
    "NavigatorSpawn", "PaneNotFenced",
    "PaneNotFound", "PaneRole", "PaneSnapshot", "PlacementRefused", "Presented",
    "ServerIdentity", "ServerIdentityMismatch", "ServerSnapshot", "TargetNotFound",
    "TmuxAdapter", "TmuxCommandFailed", "TmuxNotInstalled", "TmuxPort", "TmuxRunner",
    "TmuxUnavailable",
    "TopologyConflict", "UnmanagedPane", "ViewLayout", "check_identity", "create_view",
    "disable_input", "enable_input", "ensure_holding_session", "kill_surface_pane",
    "launch_staged_pane", "present", "read_identity", "respawn_navigators", "set_mode", "snapshot",
    "submit_control_line", "tag_pane", "verify_identity",
]
