"""Entering a project of a remote host: a local tmux window running ``ssh -t``.

Cached remote state is shown, never trusted (``core.state.remotes``), so nothing
local may act for a remote host. Entering one of its projects therefore
opens a window in the local view session that runs
``ssh -t TARGET switchboard open PROJECT``: the remote host's own engine
authorizes everything, and the person works in its view through the nested
client. Nothing in the local registry changes.

A second entry of the same remote project selects the window already open
(tagged ``@sb_remote``) instead of stacking ssh sessions; a window whose ssh
ended is replaced.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.config.config import RemoteConfig
from core.model.errors import Conflict, NotFound

if TYPE_CHECKING:
    from core.context.context import Context

OPT_REMOTE = "@sb_remote"


@dataclass(frozen=True)
class RemoteWindow:
    remote_name: str
    project: str
    window_id: str
    created: bool
    argv: tuple[str, ...]


def remote_for_host(ctx: Context, host_id: str) -> RemoteConfig:
    remote = next((r for r in ctx.config.remotes if r.host_id == host_id), None)
    if remote is None:
        raise NotFound(f"host {host_id} is not a configured remote; add it under [[remotes]]",
                       code="remote_unknown")
    return remote


def remote_by_name(ctx: Context, name: str) -> RemoteConfig:
    remote = next((r for r in ctx.config.remotes if r.name == name), None)
    if remote is None:
        known = ", ".join(r.name for r in ctx.config.remotes) or "none configured"
        raise NotFound(f"unknown remote {name!r} (known: {known}); add it under [[remotes]]",
                       code="remote_unknown")
    return remote


def ssh_argv(remote: RemoteConfig, project: str) -> list[str]:
    """``ssh -t TARGET switchboard open PROJECT``; ``$SWITCHBOARD_SSH`` names a wrapper.

    ssh joins the remote words with spaces for the remote shell, so the project
    name is shell-quoted here: a name is data on the remote side, never a command.
    """
    ssh = os.environ.get("SWITCHBOARD_SSH", "ssh")
    return [ssh, "-t", remote.ssh_target, "switchboard", "open", shlex.quote(project)]


def open_remote(ctx: Context, remote: RemoteConfig, project: str) -> RemoteWindow:
    """Open (or select) the local window for ``project`` of ``remote``: one read of the
    windows, then one batch to select, or two to create (tmux names the new window's id
    only after it exists) and then tag and select it."""
    if not project or "\n" in project or len(project) > 128:
        raise Conflict("name the remote project (one line, at most 128 characters)",
                       code="remote_project_invalid")
    stage = getattr(ctx, "stage", None)
    if stage is None:
        raise Conflict("no tmux stage: run this from a configured home", code="no_stage")
    stage.ensure_server()
    runner = stage.runner
    session = ctx.config.tmux.view_session
    tag = f"{remote.name}/{project}"
    windows = runner.run([("list-windows", "-a", "-F",
                           f"#{{window_id}}\t#{{{OPT_REMOTE}}}\t#{{pane_dead}}\t"
                           "#{session_name}")], check=False)
    argv = ssh_argv(remote, project)
    for line in windows.stdout:
        parts = line.split("\t")
        if len(parts) == 4 and parts[1] == tag:
            if parts[2] == "1":
                runner.run([("kill-window", "-t", parts[0])], check=False)
                continue
            runner.run([("select-window", "-t", parts[0])])
            return RemoteWindow(remote.name, project, parts[0], False, tuple(argv))
    has_session = any(len(p) == 4 and p[3] == session
                      for p in (line.split("\t") for line in windows.stdout))
    target = f"={session}:" if has_session else None
    create = ["new-window", "-P", "-F", "#{window_id}", "-n", f"{remote.name}:{project}"[:60]]
    if target is None:
        create = ["new-session", "-d", "-s", session, "-P", "-F", "#{window_id}",
                  "-n", f"{remote.name}:{project}"[:60]]
    else:
        create += ["-t", target]
    output = runner.run([(*create, *argv)])
    window_id = output.stdout[0].strip()
    # Kept after ssh ends, so the person reads why (a refused key, a dead host);
    # the next entry replaces it.
    runner.run([("set-option", "-w", "-t", window_id, OPT_REMOTE, tag),
                ("set-option", "-w", "-t", window_id, "remain-on-exit", "on"),
                ("select-window", "-t", window_id)])
    return RemoteWindow(remote.name, project, window_id, True, tuple(argv))
