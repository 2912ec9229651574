"""Views, the holding session, staged launches, present/park, mode and kill.

A view is one window in the person's session: navigator on the left, `main`
on the right. Every pane not on screen lives in its own window of the hidden
holding session of the same server, input disabled. Moving a pane on or off
screen is `swap-pane`, so the provider process is never restarted or moved
to another server; only its place in the window tree changes.

Every mutation is one tmux process: identity guard, pane guards, the moves,
and a re-read of the post-state, so the engine can advance transport_phase
from what tmux reported rather than from what it asked for.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.config.config import NAVIGATOR_WIDTH_RANGE
from core.model.defaults import HOLDING_SESSION, NAVIGATOR_WIDTH
from core.model.enums import ViewMode
from core.tmux.commands import (
    Check,
    both,
    equals,
    gated,
    guarded,
    outcome,
    outcomes,
    quote_token,
)
from core.tmux.errors import (
    PlacementRefused,
    TmuxCommandFailed,
    UnmanagedPane,
)
from core.tmux.identity import (
    ServerIdentity,
    check_identity,
    identity_command,
    run_guarded,
)
from core.tmux.panes import (
    DEAD_STATUS_FORMAT,
    OPT_HOLDING,
    OPT_ROLE,
    OPT_SERVES,
    OPT_SURFACE,
    OPT_VIEW,
    OPT_ZOOMED,
    PANE_FORMAT,
    PaneRole,
    PaneSnapshot,
    ServerSnapshot,
    ViewLayout,
    check_tag_value,
    list_panes_command,
    pane_lines,
    pane_state_command,
    snapshot,
)
from core.tmux.runner import TmuxCommand, TmuxRunner, classify_failure

DEFAULT_NAVIGATOR_WIDTH = NAVIGATOR_WIDTH  # config `tmux.navigator_width` default
NAVIGATOR_MIN_WIDTH = NAVIGATOR_WIDTH_RANGE[0]
"""Narrowest navigator pane tmux is asked for: what the compact layout needs (the
smallest width the config accepts, so a configured width always renders)."""
AGENT_MIN_WIDTH = 40
"""Columns the agent pane keeps before the navigator gives up its configured width."""
NARROW_SHARE_PERCENT = 33
"""In a window too narrow for both, the navigator takes this share of it (`-x 33%`)."""
OPT_REFIT = "@sb_refit"
"""Window option: the window was resized while zoomed, so the navigator is refitted
when the zoom ends (resize-pane would have unzoomed it)."""
HOLDING_SIZE = (200, 50)
VIEW_SIZE = (200, 50)
"""Size of a view session before any client attaches (tmux would use 80x24); an
attaching client resizes it to its terminal."""
ANCHOR_COMMAND = ("/bin/sh", "-c", "exit 0")
"""Keeps the holding session alive when no pane is parked; never killed. It exits at
once and its pane stays (``kept_after_exit``): a session needs a pane, not a process
(a ``tail -f /dev/null`` was 1.8 MB, issue 38)."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NOT_NAVIGATOR = f"#{{!=:#{{{OPT_ROLE}}},{PaneRole.NAVIGATOR}}}"
_IN_HOLDING = f"#{{{OPT_HOLDING}}}"
_ALIVE = "#{?pane_dead,0,1}"


@dataclass(frozen=True)
class KeyBinding:
    """A server key binding that runs a shell command (`bind-key -T TABLE KEY run-shell -b`).

    Key tables are server-wide. It is installed only while KEY is unbound in
    TABLE or bound by us (its command contains `marker`), so a person's own
    binding of that key (from their tmux.conf) is never replaced.
    `shell_command` is expanded as a tmux format when the key is pressed, in the
    context of the pane it was pressed in (`#{@sb_view}` names its view).
    """

    table: str
    key: str
    shell_command: str
    marker: str

    def command(self) -> TmuxCommand:
        return ("bind-key", "-T", self.table, self.key, "run-shell", "-b", self.shell_command)


def kept_after_exit(target: str) -> list[TmuxCommand]:
    """A pane whose words stay on screen after its process exits, with no dead-pane
    line under them: the placeholder (``core.model.placeholder``). ``-q``: tmux 3.2 has
    no ``remain-on-exit-format`` (3.3 added it) and shows its "Pane is dead" line there,
    rather than failing the batch that builds the view."""
    return [("set-option", "-p", "-t", target, "remain-on-exit", "on"),
            ("set-option", "-pq", "-t", target, "remain-on-exit-format", "")]


def bound_keys(lines: Sequence[str], table: str) -> dict[str, str]:
    """key -> the `list-keys` line binding it in `table`."""
    found: dict[str, str] = {}
    for line in lines:
        words = line.split()
        if len(words) < 4 or words[0] != "bind-key" or "-T" not in words:
            continue
        at = words.index("-T")
        if at + 2 < len(words) and words[at + 1] == table:
            found[words[at + 2]] = line
    return found


def _may_bind(binding: KeyBinding, lines: Sequence[str]) -> bool:
    existing = bound_keys(lines, binding.table).get(binding.key)
    return existing is None or binding.marker in existing


@dataclass(frozen=True)
class Presented:
    """Post-state of `present`, re-read in the same tmux process as the swap."""

    main: PaneSnapshot
    parked: PaneSnapshot
    gate_opened: bool = False
    """True when `launch_gate` was signalled, in the same tmux group as the swap."""


@dataclass(frozen=True)
class NavigatorSpawn:
    """What runs in a view's navigator pane: its argv and its pane environment.

    Given to the operations that may have to bring a navigator back (respawn
    a dead one in place, or split a new one next to main), which is why it
    names the view it serves.
    """

    view_id: str
    command: tuple[str, ...]
    env: Mapping[str, str]


def navigator_width_for(window_width: int, configured: int) -> int:
    """The navigator pane width the resize hooks ask tmux for in a window this wide.

    The configured width while the agent pane keeps AGENT_MIN_WIDTH columns;
    below that a third of the window (tmux rounds `-x 33%` down), never less
    than NAVIGATOR_MIN_WIDTH. This is the model of `navigator_fit_commands`,
    which tmux evaluates itself on every resize.
    """
    width = max(configured, NAVIGATOR_MIN_WIDTH)
    if window_width >= width + 1 + AGENT_MIN_WIDTH:
        return width
    return max(NAVIGATOR_MIN_WIDTH, min(width, window_width * NARROW_SHARE_PERCENT // 100))


def _share_threshold() -> int:
    """The narrowest window whose NARROW_SHARE_PERCENT is still NAVIGATOR_MIN_WIDTH."""
    return -(-NAVIGATOR_MIN_WIDTH * 100 // NARROW_SHARE_PERCENT)


def _fit_scripts(nav: str, configured: int) -> tuple[str, str]:
    """tmux command text of the two window hooks that keep `nav` at its width.

    `window-resized`: when `nav` sits in its own view window (its `@sb_serves`
    is the window's `@sb_view`), resize it to `navigator_width_for` the new
    window width; the choice is made by tmux with format arithmetic, no shell.
    A zoomed window only gets `@sb_refit` (resize-pane would unzoom it), and
    `window-layout-changed` refits once the zoom ends. Every command targets
    exactly `nav`; a vanished pane makes every condition false.
    """
    width = max(configured, NAVIGATOR_MIN_WIDTH)
    pane = quote_token(nav)

    def at_least(columns: int) -> str:
        return quote_token(f"#{{e|>=|:#{{window_width}},{columns}}}")

    def resize(size: str) -> str:
        return f"resize-pane -t {pane} -x {quote_token(size)}"

    fit = (f"if-shell -F -t {pane} {at_least(width + 1 + AGENT_MIN_WIDTH)} "
           f"{{ {resize(str(width))} }} "
           f"{{ if-shell -F -t {pane} {at_least(_share_threshold())} "
           f"{{ {resize(f'{NARROW_SHARE_PERCENT}%')} }} "
           f"{{ {resize(str(NAVIGATOR_MIN_WIDTH))} }} }}")
    own_view = both(f"#{{==:#{{pane_id}},{nav}}}", f"#{{{OPT_VIEW}}}",
                    f"#{{==:#{{{OPT_VIEW}}},#{{{OPT_SERVES}}}}}")
    resized = (f"if-shell -F -t {pane} {quote_token(own_view)} "
               f"{{ if-shell -F -t {pane} '#{{window_zoomed_flag}}' "
               f"{{ set-option -w -t {pane} {OPT_REFIT} 1 }} {{ {fit} }} }}")
    unzoomed = both(own_view, f"#{{{OPT_REFIT}}}", "#{!=:#{window_zoomed_flag},1}")
    layout = (f"if-shell -F -t {pane} {quote_token(unzoomed)} "
              f"{{ set-option -w -u -t {pane} {OPT_REFIT} ; {fit} }}")
    return resized, layout


_ACTIVE_PANE = "\x00nav\x00"


def navigator_fit_commands(window: str, configured: int,
                           nav: str | None = None) -> list[TmuxCommand]:
    """Install the navigator's resize hooks on `window` and run them once now.

    The hooks are window options of the view window only (never global, never
    another session's). `nav` None means the window's active pane, which is
    the navigator right after a split (`set-option -F` writes its id in).
    """
    resized, layout = _fit_scripts(nav or _ACTIVE_PANE, configured)
    flags = ["-w"]
    if nav is None:
        flags.append("-F")
        resized, layout = (text.replace("#", "##").replace(_ACTIVE_PANE, "#{pane_id}")
                           for text in (resized, layout))
    return [
        ("set-option", *flags, "-t", window, "window-resized[0]", resized),
        ("set-option", *flags, "-t", window, "window-layout-changed[0]", layout),
        ("set-hook", "-R", "-w", "-t", window, "window-resized"),
    ]


def _env_args(env: Mapping[str, str] | None) -> list[str]:
    args: list[str] = []
    for name, value in (env or {}).items():
        if not _ENV_NAME.match(name):
            raise ValueError(f"invalid environment variable name: {name!r}")
        args += ["-e", f"{name}={value}"]
    return args


def _command_args(command: Sequence[str]) -> list[str]:
    """`--` then argv; tmux execs a multi-word argv directly and runs one word via sh -c."""
    if not command:
        raise ValueError("a pane needs a command")
    return ["--", *command]


def _token() -> str:
    return uuid.uuid4().hex[:16]


def _session(name: str) -> str:
    """Exact-match target for a session (`=name:`), so a prefix never matches another."""
    if not name or any(ch in name for ch in ":.="):
        raise ValueError(f"not a usable tmux session name: {name!r}")
    return f"={name}:"


def _require_ok(result: str | None, what: str) -> None:
    if result is None:
        raise TmuxCommandFailed(f"tmux did not report the outcome of {what}; reconcile the view.")


PRIVATE_SERVER_OPTIONS: tuple[tuple[str, str], ...] = (("escape-time", "10"),)
"""Server options of a tmux server that is Switchboard's own (the home's socket).

tmux waits ``escape-time`` (500 ms by default) after an Escape to tell the key from
the start of an escape sequence, so Escape then a key within that time reached the
navigator as one Alt+key and the Escape was lost. 10 ms is far longer than a local
terminal takes to send a sequence's bytes. Never set on a person's own server
(``init`` inside tmux): there their own setting stands."""


def ensure_holding_session(
    runner: TmuxRunner,
    expected: ServerIdentity | None = None,
    *,
    holding_session: str = HOLDING_SESSION,
    size: tuple[int, int] = HOLDING_SIZE,
    server_options: Sequence[tuple[str, str]] = (),
) -> bool:
    """Create the hidden holding session unless it exists; True if created.

    Starts the server when none runs (then `expected` must be None). The
    session is tagged `@sb_holding` (guards and snapshots recognise it by the
    tag), has `destroy-unattached off` since no client ever attaches, and an
    input-disabled anchor pane so it survives having nothing parked. An
    existing session of that name is (re)tagged, idempotently. ``server_options``
    (``PRIVATE_SERVER_OPTIONS`` on Switchboard's own server) are set in the same batch.
    """
    width, height = size
    session = _session(holding_session)
    anchor = f"{session}=sb-anchor"
    settings: list[TmuxCommand] = [
        *(("set-option", "-s", name, value) for name, value in server_options),
        ("set-option", "-t", session, OPT_HOLDING, "1"),
        ("set-option", "-t", session, "destroy-unattached", "off"),
        ("set-option", "-t", session, "default-size", f"{width}x{height}"),
    ]
    create: list[TmuxCommand] = [
        ("new-session", "-d", "-s", holding_session, "-n", "sb-anchor",
         "-x", str(width), "-y", str(height), *_command_args(ANCHOR_COMMAND)),
        *settings,
        ("set-option", "-p", "-t", anchor, OPT_ROLE, PaneRole.ANCHOR),
        *kept_after_exit(anchor),
        ("select-pane", "-d", "-t", anchor),
    ]

    def run(commands: list[TmuxCommand]) -> None:
        if expected is None:
            runner.run(commands)
        else:
            run_guarded(runner, expected, commands)

    try:
        run(create)
    except TmuxCommandFailed as error:
        if not any("duplicate session" in line for line in error.stderr):
            raise
        run(settings)
        return False
    return True


def create_view(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    session_name: str,
    view_id: str,
    window_name: str,
    navigator_command: Sequence[str],
    main_command: Sequence[str],
    navigator_width: int = DEFAULT_NAVIGATOR_WIDTH,
    navigator_env: Mapping[str, str] | None = None,
    main_env: Mapping[str, str] | None = None,
    main_surface_id: str | None = None,
    cwd: str | None = None,
    size: tuple[int, int] = VIEW_SIZE,
    key_binding: KeyBinding | None = None,
) -> ViewLayout:
    """Create the view window (navigator left, `main` right) in `session_name`.

    Idempotent on `view_id`: an existing view window is returned untouched.
    The session is created if missing, `size` wide and high until a client
    attaches (its `default-size`). The navigator pane ends up active. A
    placeholder main (no `main_surface_id`) is tagged `@sb_serves=view_id`.
    `key_binding` is installed in the same batch unless the key is someone
    else's. Two tmux processes: a snapshot (with the key table when a binding
    is asked for), then one batch that builds, tags and re-reads the window.
    """
    check_tag_value(view_id)
    before, key_lines = _snapshot_with_keys(
        runner, key_binding.table if key_binding is not None else None)
    check_identity(expected, before.identity)
    existing = before.view(view_id)
    if existing is not None:
        return existing
    if any(p.parked for p in before if p.session_name == session_name):
        raise ValueError("a view never lives in the holding session")
    temp = f"sbv-{_token()}"
    window = f"{_session(session_name)}={temp}"
    cwd_args = ["-c", cwd] if cwd else []
    main_args = [*_env_args(main_env), *cwd_args, *_command_args(main_command)]
    width, height = size
    if session_name in before.sessions():
        create: list[TmuxCommand] = [
            ("set-option", "-t", _session(session_name), "default-size", f"{width}x{height}"),
            ("new-window", "-d", "-t", _session(session_name), "-n", temp, *main_args),
        ]
    else:
        # -x/-y also set the session's default-size (tmux >= 3.1), so later windows
        # are built at that size too while no client is attached.
        create = [("new-session", "-d", "-s", session_name, "-n", temp,
                   "-x", str(width), "-y", str(height), *main_args)]
    main_role = PaneRole.PROVIDER if main_surface_id else PaneRole.PLACEHOLDER
    commands: list[TmuxCommand] = [
        *create,
        ("set-option", "-w", "-t", window, OPT_VIEW, view_id),
        ("set-option", "-p", "-t", window, OPT_ROLE, main_role),
        ("set-option", "-p", "-t", window, "remain-on-exit", "on"),
    ]
    if main_surface_id:
        commands.append(
            ("set-option", "-p", "-t", window, OPT_SURFACE, check_tag_value(main_surface_id))
        )
    else:
        # The placeholder serves this view, so an empty frame can show it again; it
        # has printed and exited by now, and its words stay (no process behind them).
        commands += [("set-option", "-p", "-t", window, OPT_SERVES, view_id),
                     *kept_after_exit(window)]
    commands += [
        # Without -d the navigator becomes the active pane, so `window` targets it below.
        ("split-window", "-h", "-b", "-l", str(navigator_width), "-t", window,
         *_env_args(navigator_env), *cwd_args, *_command_args(navigator_command)),
        ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.NAVIGATOR),
        ("set-option", "-p", "-t", window, OPT_SERVES, view_id),
        ("set-option", "-p", "-t", window, "remain-on-exit", "on"),
        *navigator_fit_commands(window, navigator_width),
        # rename-window expands formats: "a#{b}" named the window "a", "#{x}" nothing
        ("rename-window", "-t", window, "--", window_name.replace("#", "##")),
    ]
    if key_binding is not None and _may_bind(key_binding, key_lines):
        commands.append(key_binding.command())
    commands.append(("list-panes", "-s", "-t", _session(session_name), "-F", PANE_FORMAT))
    output = run_guarded(runner, expected, commands)
    layout = ServerSnapshot(identity=expected, panes=tuple(pane_lines(output.stdout))).view(view_id)
    if layout is None:
        raise TmuxCommandFailed(f"view window for {view_id} was not found after creation")
    return layout


def _snapshot_with_keys(runner: TmuxRunner,
                        table: str | None) -> tuple[ServerSnapshot, tuple[str, ...]]:
    """A snapshot, plus the `list-keys -T table` lines, in one tmux process."""
    if table is None:
        return snapshot(runner), ()
    output = runner.run([identity_command(), list_panes_command(), ("list-keys", "-T", table)],
                        check=False)
    if not output.ok and not (output.stdout and all(
            "table" in line for line in output.stderr)):  # no such table: nothing bound
        raise classify_failure(output, socket_path=runner.socket_path)
    if not output.stdout:
        raise TmuxCommandFailed("tmux printed no identity")
    return ServerSnapshot(identity=ServerIdentity.parse(output.stdout[0]),
                          panes=tuple(pane_lines(output.stdout[1:]))), output.stdout[1:]


def launch_staged_pane(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    surface_id: str,
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    holding_session: str = HOLDING_SESSION,
) -> PaneSnapshot:
    """Start `command` in a new input-disabled pane of the holding session.

    `env` (the capability and generation marker) is given to this pane only
    via `new-window -e`; nothing is written to the session or global
    environment. The pane is tagged `@sb_surface` and keeps `remain-on-exit`
    so an early exit stays inspectable. Returns the re-read pane (one process).
    """
    check_tag_value(surface_id)
    name = f"sb-{_token()}"
    window = f"{_session(holding_session)}={name}"
    cwd_args = ["-c", cwd] if cwd else []
    output = run_guarded(runner, expected, [
        ("new-window", "-d", "-t", _session(holding_session), "-n", name, *_env_args(env),
         *cwd_args,
         *_command_args(command)),
        ("set-option", "-p", "-t", window, OPT_SURFACE, surface_id),
        ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.PROVIDER),
        ("set-option", "-p", "-t", window, "remain-on-exit", "on"),
        ("select-pane", "-d", "-t", window),
        pane_state_command(window),
    ])
    panes = pane_lines(output.stdout)
    if not panes:
        raise TmuxCommandFailed("staged pane was not reported after launch")
    return panes[-1]


def present(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    main_pane: str,
    target_pane: str,
    view_id: str | None = None,
    target_surface_id: str | None = None,
    enable_target_input: bool = True,
    launch_gate: str | None = None,
) -> Presented:
    """Swap parked `target_pane` into `main`; the old main is parked, input disabled.

    One tmux process. Guards, evaluated by tmux right before the swap: server
    identity; the target is a managed (`@sb_surface`, or exactly
    `target_surface_id`) live pane in the holding session; main sits in a view
    window (exactly `view_id` if given) and is not the navigator.
    `swap-pane -d -Z` keeps the active position and the window's zoom.
    Pass `enable_target_input=False` to keep the new main fenced for a
    control turn. `launch_gate` (a `tmux wait-for` channel the staged pane
    waits on before exec'ing the provider) is signalled right after the swap
    in the same tmux command group, so it opens only if the swap happened.
    Returns both panes re-read after the swap.
    """
    managed = (
        equals(f"#{{{OPT_SURFACE}}}", check_tag_value(target_surface_id))
        if target_surface_id else f"#{{{OPT_SURFACE}}}"
    )
    in_view = (
        equals(f"#{{{OPT_VIEW}}}", check_tag_value(view_id)) if view_id else f"#{{{OPT_VIEW}}}"
    )
    moves: list[TmuxCommand] = [
        ("swap-pane", "-d", "-Z", "-s", target_pane, "-t", main_pane),
        ("select-pane", "-d", "-t", main_pane),
    ]
    if enable_target_input:
        moves.append(("select-pane", "-e", "-t", target_pane))
    if launch_gate:
        # Same tmux group as the swap: it runs only if the swap succeeded, i.e. once
        # the target occupies the position the guard just proved is the view's main.
        moves.append(("wait-for", "-S", check_tag_value(launch_gate)))
    output = run_guarded(runner, expected, [
        guarded([
            Check(target_pane, both(managed, _NOT_NAVIGATOR), "target_unmanaged"),
            Check(target_pane, both(_IN_HOLDING, _ALIVE), "target_not_parked"),
            Check(main_pane, both(in_view, _NOT_NAVIGATOR, f"#{{!=:#{{pane_id}},{target_pane}}}"),
                  "main_not_in_view"),
        ], moves),
        pane_state_command(target_pane),
        pane_state_command(main_pane),
    ])
    result = outcome(output.stdout)
    _require_ok(result, "present")
    panes = pane_lines(output.stdout)
    if result == "target_unmanaged":
        raise UnmanagedPane(
            f"pane {target_pane} is not a Switchboard-launched provider pane; it was not moved."
        )
    if result != "ok":
        raise PlacementRefused(
            f"present refused ({result}): target {target_pane} must be parked in the holding "
            f"session and alive, main {main_pane} must sit in the view window. Nothing moved; "
            "reconcile the view.",
        )
    if len(panes) != 2:
        raise TmuxCommandFailed("present did not report its post-state")
    return Presented(main=panes[0], parked=panes[1], gate_opened=launch_gate is not None)


def _is_navigator_of(view_id: str) -> str:
    return both(equals(f"#{{{OPT_ROLE}}}", PaneRole.NAVIGATOR),
                equals(f"#{{{OPT_SERVES}}}", check_tag_value(view_id)))


def _respawn_commands(pane_id: str, spawn: NavigatorSpawn, navigator_width: int,
                      leave_status: int | None = None) -> list[TmuxCommand]:
    """Restart the dead navigator `pane_id` in place, gated on its tags and on it being dead
    (and, with `leave_status`, on it not having exited with that status).

    `respawn-pane` without `-k`: tmux itself also refuses a pane whose process
    still runs, so a live navigator is never killed. The pane keeps its id,
    its place (view window or holding), its tags, its fence and remain-on-exit.
    Its resize hooks are (re)installed and run first, so a navigator that died
    squeezed by a small terminal comes back at its width (in holding the hooks
    find it outside its view and do nothing).
    """
    checks = [Check(pane_id, _is_navigator_of(spawn.view_id), "not_navigator"),
              Check(pane_id, "#{pane_dead}", "navigator_running")]
    if leave_status is not None:
        checks.append(Check(pane_id, f"#{{!=:{DEAD_STATUS_FORMAT},{int(leave_status)}}}",
                            "navigator_left"))
    return gated(
        checks,
        [*navigator_fit_commands(pane_id, navigator_width, nav=pane_id),
         ("respawn-pane", "-t", pane_id, *_env_args(spawn.env), *_command_args(spawn.command))],
    )


def respawn_navigators(
    runner: TmuxRunner,
    expected: ServerIdentity,
    dead: Sequence[tuple[str, NavigatorSpawn]],
    *,
    navigator_width: int = DEFAULT_NAVIGATOR_WIDTH,
    leave_status: int | None = None,
) -> dict[str, str]:
    """Restart dead navigator panes in place: pane id -> `"ok"` or why not.

    One tmux process for all of them: identity guard, then per pane a gate
    (tagged navigator of exactly that view, and dead) and `respawn-pane`. A
    refusal stops the batch (see `gated`): that pane gets its label, the
    later ones `not_reached` (the next reconcile pass reads them again).
    `leave_status`: a pane dead with that exit status by the time the batch runs
    is refused (`navigator_left`), whatever the caller read before: reconcile's
    revive passes the parked status, so a pane parked after its reading stays asleep.
    """
    if not dead:
        return {}
    commands: list[TmuxCommand] = []
    for pane_id, spawn in dead:
        commands += [*_respawn_commands(pane_id, spawn, navigator_width, leave_status),
                     pane_state_command(pane_id)]
    output = run_guarded(runner, expected, commands, refusal_stops=True)
    labels = outcomes(output.stdout, missing_raises=False)
    return {pane_id: labels[index] if index < len(labels) else "not_reached"
            for index, (pane_id, _spawn) in enumerate(dead)}


def set_mode(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    view_id: str,
    mode: ViewMode,
    navigator_width: int = DEFAULT_NAVIGATOR_WIDTH,
    holding_session: str = HOLDING_SESSION,
    navigator: NavigatorSpawn | None = None,
) -> ViewLayout:
    """Switch a view between navigator and direct mode without touching `main`.

    Direct mode breaks the live navigator pane out into the holding session
    (input disabled) instead of killing it, so toggling back is instant and
    keeps its UI state; the provider pane is never restarted or moved. Zoom
    is remembered in the window's `@sb_zoomed` while the window has one pane
    (tmux cannot zoom a lone pane) and re-applied on the way back.

    With `navigator` given, the way back also brings back a navigator that
    is not running: a dead one (it crashed or was quit; panes keep
    remain-on-exit) is respawned in place before it is joined, and a missing
    one is split next to main anew. Both are gated in the same batch as the move.
    Two tmux processes: a snapshot, then one guarded batch with the re-read.
    """
    check_tag_value(view_id)
    if navigator is not None and navigator.view_id != view_id:
        raise ValueError("the navigator spawn serves another view")
    before = snapshot(runner)
    check_identity(expected, before.identity)
    layout = before.view(view_id)
    if layout is None:
        raise PlacementRefused(f"view {view_id} has no tmux window; reconcile the view.")
    to_navigator = mode is ViewMode.NAVIGATOR and navigator is not None
    revive = to_navigator and layout.navigator is not None and layout.navigator.dead
    if layout.mode is mode and not revive:
        return layout
    if layout.navigator is None and not to_navigator:
        raise PlacementRefused(
            f"view {view_id} has no navigator pane to show or hide; nothing moved."
        )
    if layout.main is None:
        raise PlacementRefused(f"view {view_id} has no single main pane; reconcile the view.")
    nav = layout.navigator.pane_id if layout.navigator is not None else None
    commands: list[TmuxCommand] = []
    if nav is None:
        assert navigator is not None
        commands += _split_navigator(layout, navigator, navigator_width)
    else:
        if revive:
            assert navigator is not None
            commands += _respawn_commands(nav, navigator, navigator_width)
        if layout.mode is not mode:
            commands += _move_navigator(layout, nav, mode, navigator_width, holding_session)
    commands.append(("list-panes", "-s", "-t", _session(layout.session_name), "-F", PANE_FORMAT))
    if nav is not None:
        commands.append(pane_state_command(nav))
    output = run_guarded(runner, expected, commands, refusal_stops=True)
    results = outcomes(output.stdout)
    refused = next((label for label in results if label != "ok"), None)
    if refused is not None:
        raise PlacementRefused(
            f"mode change of view {view_id} refused ({refused}): the panes changed since they "
            "were read. Nothing moved; reconcile the view."
        )
    expected_guards = 1 if nav is None else int(revive) + int(layout.mode is not mode)
    _require_ok(results[0] if len(results) == expected_guards else None, "mode change")
    panes = _unique(pane_lines(output.stdout))
    after = ServerSnapshot(identity=expected, panes=panes).view(view_id)
    if after is None or after.mode is not mode:
        raise TmuxCommandFailed(f"view {view_id} is not in {mode} mode after the change")
    return after


def _main_in_window(layout: ViewLayout) -> Check:
    assert layout.main is not None
    return Check(layout.main.pane_id,
                 both(equals("#{window_id}", layout.window_id), _NOT_NAVIGATOR), "main_moved")


def _restore_zoom(layout: ViewLayout) -> list[TmuxCommand]:
    """Zoom main again if direct mode remembered it (`@sb_zoomed`), then forget it."""
    assert layout.main is not None
    main = layout.main.pane_id
    return [("if-shell", "-F", "-t", main, f"#{{{OPT_ZOOMED}}}", "resize-pane -Z -t " + main),
            ("set-option", "-w", "-u", "-t", layout.window_id, OPT_ZOOMED)]


def _move_navigator(layout: ViewLayout, nav: str, mode: ViewMode, navigator_width: int,
                    holding_session: str) -> list[TmuxCommand]:
    """The guarded move of the navigator pane: park it (direct) or join it (navigator).

    Joining is gated rather than guarded (one label either way) because the
    resize hooks it installs on the view window carry quoted text.
    """
    assert layout.main is not None
    window, view_id = layout.window_id, layout.view_id
    if mode is ViewMode.DIRECT:
        return [guarded(
            [Check(nav, both(_is_navigator_of(view_id), equals("#{window_id}", window)),
                   "navigator_moved")],
            [
                ("set-option", "-w", "-t", window, "-F", OPT_ZOOMED, "#{window_zoomed_flag}"),
                ("break-pane", "-d", "-s", nav, "-t", _session(holding_session),
                 "-n", f"sb-nav-{view_id}"),
                ("select-pane", "-d", "-t", nav),
            ],
        )]
    return gated(
        [Check(nav, both(_is_navigator_of(view_id), _IN_HOLDING), "navigator_moved"),
         _main_in_window(layout)],
        [
            # -f: the whole window's height, beside main and the stream pane under it
            ("join-pane", "-d", "-f", "-h", "-b", "-l", str(navigator_width), "-s", nav,
             "-t", layout.main.pane_id),
            ("select-pane", "-e", "-t", nav),
            # The keyboard goes with it: prefix + S means "back to the navigator", so the
            # next key is the navigator's, not the agent's (-e alone only unfences it).
            ("select-pane", "-t", nav),
            *navigator_fit_commands(nav, navigator_width, nav=nav),
            *_restore_zoom(layout),
        ],
    )


def _split_navigator(layout: ViewLayout, spawn: NavigatorSpawn,
                     navigator_width: int) -> list[TmuxCommand]:
    """A new navigator pane left of main, for a view whose navigator pane is gone.

    Gated like a respawn (the command line is data, so it stays at argv
    level). Split without -d: the new pane is the window's active pane, which
    is what the window target then tags (as in create_view).
    """
    assert layout.main is not None
    window = layout.window_id
    return gated([_main_in_window(layout)], [
        ("split-window", "-f", "-h", "-b", "-l", str(navigator_width),
         "-t", layout.main.pane_id, *_env_args(spawn.env), *_command_args(spawn.command)),
        ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.NAVIGATOR),
        ("set-option", "-p", "-t", window, OPT_SERVES, check_tag_value(spawn.view_id)),
        ("set-option", "-p", "-t", window, "remain-on-exit", "on"),
        *navigator_fit_commands(window, navigator_width),
        *_restore_zoom(layout),
    ])


def _unique(panes: list[PaneSnapshot]) -> tuple[PaneSnapshot, ...]:
    seen: dict[str, PaneSnapshot] = {}
    for pane in panes:
        seen.setdefault(pane.pane_id, pane)
    return tuple(seen.values())


def show_view(runner: TmuxRunner, expected: ServerIdentity, *, view_id: str,
              main_pane: str, window_id: str) -> None:
    """Make the view's window the current one of its session, so every client of
    that session (the person looking at another view's navigator) now shows it.

    Refused unless the server is `expected` and `main_pane` sits in a window
    tagged ``@sb_view == view_id``; one tmux process.
    """
    check_tag_value(view_id)
    output = run_guarded(runner, expected, [
        guarded([Check(main_pane, equals(f"#{{{OPT_VIEW}}}", view_id), "not_view")],
                [("select-window", "-t", window_id)]),
    ])
    result = outcome(output.stdout)
    _require_ok(result, "show the view")
    if result != "ok":
        raise PlacementRefused(f"pane {main_pane} is not in view {view_id}'s window; "
                               "nothing was switched. Reconcile the view.")


def kill_surface_pane(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    pane_id: str,
    surface_id: str,
) -> None:
    """Kill exactly the launch-owned pane of `surface_id`, and nothing else.

    Refused unless, inside the same tmux queue: the server is `expected`, the
    pane carries `@sb_surface == surface_id`, and it is alone in its own
    window of the holding session (so neither a view, a person's session, a
    navigator nor the server can be affected). Present another pane first to
    stop the one in `main`.
    """
    check_tag_value(surface_id)
    output = run_guarded(runner, expected, [
        guarded([
            Check(pane_id, equals(f"#{{{OPT_SURFACE}}}", surface_id), "unmanaged"),
            Check(pane_id, both(_IN_HOLDING, equals("#{window_panes}", "1")), "not_parked"),
        ], [("kill-pane", "-t", pane_id)]),
    ])
    result = outcome(output.stdout)
    _require_ok(result, "kill")
    if result == "unmanaged":
        raise UnmanagedPane(
            f"pane {pane_id} is not the launch-owned pane of surface {surface_id}; "
            "Switchboard only kills panes it launched. Nothing was killed."
        )
    if result != "ok":
        raise PlacementRefused(
            f"pane {pane_id} is on screen or shares a window; park it before stopping it. "
            "Nothing was killed."
        )
