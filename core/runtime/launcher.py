"""Launch a provider into its exact pane: planned -> authorized -> started.

The capability is minted here: the raw value goes only into the pane's
environment, SQLite keeps its digest. The pane starts parked and gated
(`tmux wait-for`); the gate is signalled by the swap that places the pane in
main, in the same tmux command group, so the provider process executes only
once its exact pane is in view. Binding (started -> bound) happens when the
first hook arrives.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from core.config.capabilities import (
    AGENT_TOOL_ENV,
    CAPABILITY_TTL_MS,
    ENV_CAPABILITY,
    ENV_GENERATION,
    digest,
    new_raw_capability,
)
from core.model.enums import LaunchAction, PlacementState, Provider, RuntimePresence
from core.model.errors import Conflict, InvariantViolation, ProviderError, SwitchboardError
from core.model.files import FolderNotPrivate, own_dir
from core.model.tool_schemas import TOOLS as MCP_TOOLS
from core.providers.agent_http import ENV_TRANSPORT, HttpEndpoint, ServerUnavailable
from core.providers.base import LaunchInputs, McpServer
from core.providers.checks import check_provider
from core.runtime.stage import CONTROL_TEMPLATE, gate_name
from core.tmux.errors import ServerIdentityMismatch, TmuxUnavailable
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


def hook_command(ctx: Context) -> list[str]:
    """The hook argv providers run; the default is this interpreter's fast hook entry."""
    from core.install.hooks_install import launch_hook_command

    configured = list(ctx.config.hooks.command)
    if configured == ["switchboard", "hook"]:
        return list(launch_hook_command())
    return configured


def launch_home_env(ctx: Context) -> dict[str, str]:
    """Where the agent's hooks, MCP server and agent tools find this engine's home.

    Both the state root and the config path, absolute: a child given only
    ``SWITCHBOARD_HOME`` would look for the config inside it, which is not
    where ``switchboard init`` puts it in the default XDG layout; and the pane's
    own environment comes from the tmux server, which may predate any
    ``XDG_*``/``SWITCHBOARD_*`` the person set later.
    """
    home = getattr(ctx, "home", None)
    return home.child_env() if home is not None else {}


def ensure_view_window(ctx: Context, view_id: str) -> None:
    """Make sure the view has its tmux window (with a running navigator) and record
    its exact locators.

    Single-flight across processes (the stage's view lock): two concurrent
    entries of one project would otherwise both see an unbound view and each
    build a window tagged with it. A view recorded on a server that is gone is
    refused here (TmuxUnavailable / ServerIdentityMismatch, nothing changed);
    an explicit entry rebuilds it through ``core.reconcile.recovery.enter_view``.
    """
    stage = ctx.require_stage()
    with stage.view_lock():
        view = views_ops.get_view(ctx.conn, view_id)  # read under the lock
        frame = ctx.conn.execute("SELECT title FROM frames WHERE frame_id = ?",
                                    (view["active_frame_id"],)).fetchone()
        window_id, main_pane, nav_pane = stage.ensure_view(
            view, frame["title"] if frame else "view")
        with write_transaction(ctx.conn) as conn:
            # ensure_view refused a view recorded on another server generation, so the
            # recorded server (if any) is the live one.
            server_id = view["tmux_server_id"] or stage.server_row(conn)
            if (view["tmux_window_id"], view["tmux_server_id"], view["navigator_pane_id"]) != \
                    (window_id, server_id, nav_pane):
                views_ops.bind_view_tmux(conn, view_id, tmux_server_id=server_id,
                                         window_id=window_id, main_pane_id=main_pane,
                                         navigator_pane_id=nav_pane, now=ctx.now())


def run(ctx: Context, launch_id: str, *, present: bool = True,
        initial_prompt_for: str | None = None) -> None:
    conn = ctx.conn
    now = ctx.now()
    launch = conn.execute("SELECT * FROM launch_intents WHERE launch_id = ?",
                          (launch_id,)).fetchone()
    if launch is None or launch["state"] != "planned":
        return
    try:
        # Version output is strict input: a missing or unrecognisable provider fails
        # the launch before any pane exists.
        version = check_provider(ctx.config, Provider(launch["provider"]))
    except ProviderError as exc:
        _roll_back_bundle(ctx, launch_id, f"{exc.code}: {exc.message}")
        raise
    placement = _placement(conn, launch["frame_id"])
    try:
        ensure_view_window(ctx, placement["view_id"])
    except (ServerIdentityMismatch, TmuxUnavailable) as exc:
        _roll_back_bundle(ctx, launch_id, f"no tmux server for the view: {exc.message}")
        raise
    stage = ctx.require_stage()
    server_id = views_ops.get_view(conn, placement["view_id"])["tmux_server_id"]
    raw = new_raw_capability()
    with write_transaction(conn) as tx:
        surface = tx.execute("SELECT * FROM surfaces WHERE launch_id = ?",
                             (launch_id,)).fetchone()
        placement = _placement(tx, launch["frame_id"])
        sessions_ops.move_launch(tx, launch_id, "planned", "authorized", now)
        # A new process of the session runs no turn of the one that died mid-turn (a
        # kill, a reboot): its `working` is over, unknown until this one's hooks speak.
        sessions_ops.end_stale_turn(tx, launch["session_key"], now)
        sessions_ops.insert_capability(
            tx, capability_id=ctx.ids.new_id(), digest=digest(raw), host_id=ctx.host_id,
            view_id=placement["view_id"], frame_id=launch["frame_id"],
            key=launch["session_key"], surface_id=surface["surface_id"], launch_id=launch_id,
            placement_generation=placement["generation"], issued_at=now,
            expires_at=now + CAPABILITY_TTL_MS)
    ctx.fault_point("after_authorize")
    session = sessions_ops.get_session(conn, launch["session_key"])
    provider = Provider(launch["provider"])
    tool_env = {ENV_CAPABILITY: raw, ENV_GENERATION: ctx.generation_id,
                "SWITCHBOARD_TMUX_SOCKET": stage.socket_path, **launch_home_env(ctx)}
    try:
        argv, env = _plan(ctx, provider, LaunchAction(launch["action"]), session,
                          CONTROL_TEMPLATE if initial_prompt_for else None,
                          launch_id=launch_id, tool_env=tool_env)
    except (FolderNotPrivate, ProviderError, ServerUnavailable) as exc:
        # A run folder someone else could reach, a launch the adapter refuses (a fork
        # whose parent session is gone), or no server for its agent tools: no pane,
        # the start undone.
        _roll_back_bundle(ctx, launch_id, f"{exc.code}: {exc.message}")
        raise
    env.update(tool_env)
    project = ctx.config.project(session["project_id"])
    try:
        pane = stage.launch_pane(surface_id=surface["surface_id"], launch_id=launch_id,
                                 argv=argv, env=env, cwd=project.root,
                                 tmux_server_id=server_id)
    except (ServerIdentityMismatch, TmuxUnavailable) as exc:
        # Refused behind the identity guard / no server answered: no pane exists.
        _roll_back_bundle(ctx, launch_id, str(exc))
        raise
    except SwitchboardError as exc:
        with write_transaction(conn) as tx:
            sessions_ops.move_launch(tx, launch_id, "authorized", "failed", ctx.now(),
                                     failure=str(exc)[:1024])
        raise
    ctx.fault_point("after_pane")
    with write_transaction(conn) as tx:
        sessions_ops.surface_live(tx, surface["surface_id"], tmux_server_id=server_id,
                                  pane_id=pane.pane_id, process_id=pane.pane_pid,
                                  now=ctx.now())
        sessions_ops.bind_capability_pane(tx, surface["surface_id"], server_id, pane.pane_id)
        sessions_ops.move_launch(tx, launch_id, "authorized", "started", ctx.now())
        sessions_ops.set_runtime_presence(tx, launch["session_key"], RuntimePresence.LIVE,
                                          ctx.now())
        sessions_ops.record_provider_version(tx, launch["session_key"], version.text,
                                             ctx.now())
    from core.broker.membership import after_launch
    after_launch(ctx, launch["frame_id"])  # a broker member from its first pane on
    if present:
        _present_started(ctx, launch["frame_id"], pane.pane_id, launch_id)
    # Otherwise the gate stays shut: the saga (push) or a later focus presents the
    # staged pane and opens the gate in that swap's batch.


def _placement(conn: sqlite3.Connection, frame_id: str) -> sqlite3.Row:
    """The placement of a frame being launched: its start bundle created it."""
    placement = views_ops.placement_of_frame(conn, frame_id)
    if placement is None:
        raise InvariantViolation(f"frame {frame_id} has no placement to launch into")
    return placement


def _roll_back_bundle(ctx: Context, launch_id: str, why: str) -> None:
    """The provider was refused before any pane existed: the start bundle is rolled
    back exactly (storage.operations.bundles), so the frame is empty and n works."""
    from storage.operations.bundles import roll_back_start_bundle

    with write_transaction(ctx.conn) as tx:
        roll_back_start_bundle(tx, launch_id, new_placement_id=ctx.ids.new_id(),
                               failure=why, now=ctx.now())


def _present_started(ctx: Context, frame_id: str, pane_id: str, launch_id: str) -> None:
    """A started frame that its view shows goes to main, gate opened by the swap;
    staged -> active."""
    conn = ctx.conn
    placement = _placement(conn, frame_id)
    view = views_ops.get_view(conn, placement["view_id"])
    if view["active_frame_id"] != frame_id:
        raise Conflict("the frame is not the view's active frame; focus it first")
    shown = ctx.require_stage().present(view, pane_id, launch_gate=gate_name(launch_id))
    if shown != pane_id:
        raise Conflict(f"main shows {shown} instead of the launched pane {pane_id}")
    with write_transaction(conn) as tx:
        placement = _placement(tx, frame_id)
        if placement["state"] == PlacementState.STAGED:
            views_ops.move_placement(tx, placement["placement_id"], placement["generation"],
                                     PlacementState.ACTIVE, ctx.now(), focused=True)


def _plan(ctx: Context, provider: Provider, action: LaunchAction, session: sqlite3.Row,
          initial_prompt: str | None, launch_id: str = "launch",
          tool_env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    from core.providers.adapters import get_adapter

    config = ctx.config.providers.get(provider)
    command = config.command if config else None
    run_dir = own_dir(ctx.require_home().run_dir / session["session_key"].replace(":", "_"))
    http = _agent_endpoint(ctx, session, run_dir, launch_id, tool_env or {})
    plan = get_adapter(provider, command).plan(LaunchInputs(
        fork_from=_fork_from(ctx, launch_id),
        action=action, session_id=session["provider_session_id"],
        initial_prompt=initial_prompt, run_dir=run_dir, launch_id=launch_id,
        hook_command=tuple(hook_command(ctx)),
        agent_tools=McpServer((), AGENT_TOOL_ENV, AGENT_TOOL_NAMES, http)))
    env = dict(plan.env)
    env[ENV_TRANSPORT] = "http"  # its turn-start hook restarts a killed server
    return list(plan.argv), env


def _fork_from(ctx: Context, launch_id: str) -> str | None:
    """The session a forked frame's first session copies (``core.runtime.forks``)."""
    from core.runtime.forks import fork_source

    launch = ctx.conn.execute("SELECT * FROM launch_intents WHERE launch_id = ?",
                              (launch_id,)).fetchone()
    return fork_source(ctx, ctx.conn, launch) if launch is not None else None


def _agent_endpoint(ctx: Context, session: sqlite3.Row, run_dir: Path,
                    launch_id: str, tool_env: dict[str, str]) -> HttpEndpoint:
    """The agent tools of one launch: the home's ``switchboard server`` (started when it
    is not running) and a bearer token for this launch, registered with the launch's
    tool environment. The only transport (issue 38.2): no process of the agent's serves
    the tools. A server that cannot start raises ``ServerUnavailable``: the launch is
    refused before any pane exists, in one line naming the server's log."""
    from core.model.tool_schemas import ENV_READY_FILE
    from core.providers import agent_http
    from core.providers.claude_settings import READY_PREFIX

    home = ctx.require_home()
    # The token is registered while a server that was not running starts (its files
    # are read per request): the launch waits for the start once, not for both.
    starting = agent_http.start_server(home.run_dir, home.child_env())
    # The launch's "tools listed" marker, written by the server on this token's first
    # ``tools/list``: Claude's prompt waits for it (``fresh_ready_file``); Codex's
    # launch has no wait, and the marker is only a file in its run folder.
    env = {**tool_env, ENV_READY_FILE: str(run_dir / f"{READY_PREFIX}{launch_id}")}
    project = ctx.config.project(session["project_id"]) if session["project_id"] else None
    if project is not None:
        env["SWITCHBOARD_MCP_CWD"] = str(project.root)
    token = agent_http.register_token(home.run_dir, run_dir, env)
    try:
        info = starting.wait()
    except agent_http.ServerUnavailable:
        agent_http.withdraw_token(home.run_dir, token)  # never handed out
        raise
    return agent_http.HttpEndpoint(info.url, token)


AGENT_TOOL_NAMES = tuple(tool["name"] for tool in MCP_TOOLS)
"""The MCP server's tools, each by name; Codex runs them without asking."""


def engine_tmp() -> Path:
    """Per-user, private: a shared /tmp folder could be made first by someone else, so an
    existing one that is not this user's 0700 folder is refused (``own_dir``)."""
    import tempfile
    return own_dir(Path(tempfile.gettempdir()) / f"switchboard-run-{os.getuid()}")
