"""Pane metadata: one `list-panes -a -F` call, parsed into frozen snapshots.

Switchboard marks what it owns with tmux user options, which travel with a
pane through swap-pane/break-pane/join-pane:

- pane `@sb_role`     navigator | provider | placeholder | anchor | stream
- pane `@sb_surface`  the Surface id of a launched provider pane
- pane `@sb_serves`   the view a navigator pane belongs to (wherever it sits)
- window `@sb_view`   the view a window *is*; read per pane, it names the
                      view the pane currently sits in
- window `@sb_zoomed` zoom remembered while the view is in direct mode
- session `@sb_holding` marks the holding session, whatever it is named;
                      read per pane, it says "this pane is parked or staged"
- pane `@sb_frame`    the frame an extra pane belongs to: a pane someone else
                      split into a view's window, which reconcile moved out
                      to the holding session (``core.reconcile.foreign``)
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from functools import cached_property

from core.model.enums import ViewMode
from core.tmux.errors import TmuxCommandFailed, TopologyConflict
from core.tmux.identity import ServerIdentity, check_identity, identity_command, run_guarded
from core.tmux.runner import TmuxCommand, TmuxRunner

"""Default name of the hidden session where parked and staged panes live (config
`tmux.holding_session`); guards recognise it by its `@sb_holding` tag, not its name."""

OPT_ROLE = "@sb_role"
OPT_SURFACE = "@sb_surface"
OPT_SERVES = "@sb_serves"
OPT_VIEW = "@sb_view"
OPT_ZOOMED = "@sb_zoomed"
OPT_HOLDING = "@sb_holding"
OPT_FRAME = "@sb_frame"

_SEP = "\x1f"  # tmux escapes control characters inside names, so this never occurs in a value
_TAG_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_TAG_NAME = re.compile(r"^@sb_[a-z_]+$")


class PaneRole(StrEnum):
    """What a Switchboard-created pane is for."""

    NAVIGATOR = "navigator"
    PROVIDER = "provider"
    PLACEHOLDER = "placeholder"
    ANCHOR = "anchor"
    STREAM = "stream"
    """The read-only inbox stream the person opens under main (``l``): part of the
    view's window but never main, so it neither makes main ambiguous nor moves."""
    EXTRA = "extra"
    """A foreign pane (split into a view's window by an agent, a plugin or the person)
    after reconcile moved it to the holding session: it keeps running there, listed
    under the frame named by its ``@sb_frame`` tag."""


def check_tag_value(value: str) -> str:
    """Tag values are ids or enum words; anything else could break a tmux format."""
    if not _TAG_VALUE.match(value):
        raise ValueError(f"not a valid Switchboard tag value: {value!r}")
    return value


@dataclass(frozen=True)
class PaneSnapshot:
    """One pane as tmux reported it at one instant."""

    pane_id: str
    session_name: str
    window_id: str
    window_index: int
    window_name: str
    pane_index: int
    pane_pid: int | None
    input_off: bool
    dead: bool
    dead_status: int | None
    zoomed: bool
    active: bool
    width: int
    height: int
    left: int
    window_panes: int
    current_command: str
    surface_id: str | None
    role: PaneRole | None
    view_id: str | None
    serves_view: str | None
    zoom_memo: bool
    in_holding: bool
    frame_id: str | None = None
    """``@sb_frame``: the frame an extra pane is listed under (None for other panes)."""

    @property
    def parked(self) -> bool:
        """In the holding session (parked or staged), where no view can reach it."""
        return self.in_holding

    @property
    def managed(self) -> bool:
        """Launched by Switchboard as a provider surface."""
        return self.surface_id is not None

    @property
    def foreign(self) -> bool:
        """Not made by Switchboard: no role and no surface tag (someone split it in)."""
        return self.role is None and self.surface_id is None


LAST_WORDS_PAUSE_S = 0.2
"""How long a pane's process stays after printing its last words (a parked navigator's
screen, the quit hint), so tmux reads them before the exit: tmux before 3.7 can close
the terminal of a process that has exited without reading what it printed last (it
asks for unread bytes only when the pane is piped), leaving the pane blank."""
ASLEEP_STATUS = 77
"""Exit status of a parked navigator pane's screen keeper (``core.memory.parking``): a
dead navigator pane with it is asleep, not crashed, and only waking brings it back."""
DEAD_STATUS_FORMAT = (
    "#{?#{!=:#{pane_dead_status},},#{pane_dead_status},"
    "#{?#{&&:#{pane_dead},#{&&:#{==:#{pane_dead_signal},},"
    f"#{{m:*; exit {ASLEEP_STATUS}*,#{{pane_start_command}}}}}}}},{ASLEEP_STATUS},}}}}")
"""``#{pane_dead_status}``, except that a dead pane whose status and signal tmux never
recorded reads ``ASLEEP_STATUS`` when it ran the screen keeper (its start command ends in
``exit 77``). tmux 3.3a now and then records no exit status at all for a respawned
pane's process (~15 % of `respawn-pane -k` then a quick exit, in a loop; ~1 % of the
soak's parks): read plainly, such a parked navigator looked crashed, and reconcile
revived it, cold, though nobody looked at it (issue 25's soak: "did not park")."""


_FORMATS: dict[str, str] = {
    "pane_id": "#{pane_id}",
    "session_name": "#{session_name}",
    "window_id": "#{window_id}",
    "window_index": "#{window_index}",
    "window_name": "#{window_name}",
    "pane_index": "#{pane_index}",
    "pane_pid": "#{pane_pid}",
    "input_off": "#{pane_input_off}",
    "dead": "#{pane_dead}",
    "dead_status": DEAD_STATUS_FORMAT,
    "zoomed": "#{window_zoomed_flag}",
    "active": "#{pane_active}",
    "width": "#{pane_width}",
    "height": "#{pane_height}",
    "left": "#{pane_left}",
    "window_panes": "#{window_panes}",
    "current_command": "#{pane_current_command}",
    "surface_id": "#{" + OPT_SURFACE + "}",
    "role": "#{" + OPT_ROLE + "}",
    "view_id": "#{" + OPT_VIEW + "}",
    "serves_view": "#{" + OPT_SERVES + "}",
    "zoom_memo": "#{" + OPT_ZOOMED + "}",
    "in_holding": "#{" + OPT_HOLDING + "}",
    "frame_id": "#{" + OPT_FRAME + "}",
}
assert list(_FORMATS) == [f.name for f in fields(PaneSnapshot)]
PANE_FORMAT = _SEP.join(_FORMATS.values())


def _int(value: str) -> int:
    return int(value) if value else 0


def _opt_int(value: str) -> int | None:
    return int(value) if value else None


def _role(value: str) -> PaneRole | None:
    try:
        return PaneRole(value) if value else None
    except ValueError:
        return None


def parse_pane(line: str) -> PaneSnapshot:
    values = line.split(_SEP)
    if len(values) != len(_FORMATS):
        raise TmuxCommandFailed(f"unexpected list-panes line: {line!r}")
    raw = dict(zip(_FORMATS, values, strict=True))
    return PaneSnapshot(
        pane_id=raw["pane_id"],
        session_name=raw["session_name"],
        window_id=raw["window_id"],
        window_index=_int(raw["window_index"]),
        window_name=raw["window_name"],
        pane_index=_int(raw["pane_index"]),
        pane_pid=_opt_int(raw["pane_pid"]),
        input_off=raw["input_off"] == "1",
        dead=raw["dead"] == "1",
        dead_status=_opt_int(raw["dead_status"]),
        zoomed=raw["zoomed"] == "1",
        active=raw["active"] == "1",
        width=_int(raw["width"]),
        height=_int(raw["height"]),
        left=_int(raw["left"]),
        window_panes=_int(raw["window_panes"]),
        current_command=raw["current_command"],
        surface_id=raw["surface_id"] or None,
        role=_role(raw["role"]),
        view_id=raw["view_id"] or None,
        serves_view=raw["serves_view"] or None,
        zoom_memo=raw["zoom_memo"] == "1",
        in_holding=raw["in_holding"] == "1",
        frame_id=raw["frame_id"] or None,
    )


def pane_lines(stdout: tuple[str, ...]) -> list[PaneSnapshot]:
    """Pane lines of a batch; a re-read of a vanished pane prints empty fields and is dropped."""
    panes = [parse_pane(line) for line in stdout if _SEP in line]
    return [pane for pane in panes if pane.pane_id]


def pane_state_command(pane_id: str) -> TmuxCommand:
    """Re-read one pane inside a batch (used as the post-state of a move)."""
    return ("display-message", "-p", "-t", pane_id, PANE_FORMAT)


def list_panes_command() -> TmuxCommand:
    return ("list-panes", "-a", "-F", PANE_FORMAT)


@dataclass(frozen=True)
class ViewLayout:
    """A view window as observed: which pane is main, where the navigator is."""

    view_id: str
    session_name: str
    window_id: str
    mode: ViewMode
    zoomed: bool
    main: PaneSnapshot | None
    navigator: PaneSnapshot | None
    extra_panes: tuple[PaneSnapshot, ...]
    """Switchboard panes beyond one besides the navigator; main is then None."""
    foreign: tuple[PaneSnapshot, ...] = ()
    """Panes without any Switchboard tag in the window (an agent, a plugin or the person
    split them in): never main, so a split never hides what main shows; reconcile moves
    them out (``core.reconcile.foreign``)."""


@dataclass
class _PaneIndex:
    """Lookups of one snapshot's panes; the first pane wins, as the scans it replaces did."""

    by_id: dict[str, PaneSnapshot]
    by_surface: dict[str, PaneSnapshot]
    in_view: dict[str, list[PaneSnapshot]]
    """Unparked panes tagged with each view, in snapshot order."""
    navigators: dict[str, PaneSnapshot]
    """The navigator pane serving each view."""

    @classmethod
    def of(cls, panes: tuple[PaneSnapshot, ...]) -> _PaneIndex:
        index = cls({}, {}, {}, {})
        for p in panes:
            index.by_id.setdefault(p.pane_id, p)
            if p.surface_id is not None:
                index.by_surface.setdefault(p.surface_id, p)
            if p.view_id is not None and not p.parked:
                index.in_view.setdefault(p.view_id, []).append(p)
            if p.role is PaneRole.NAVIGATOR and p.serves_view is not None:
                index.navigators.setdefault(p.serves_view, p)
        return index


@dataclass(frozen=True)
class ServerSnapshot:
    """Identity and every pane, read by the same tmux process."""

    identity: ServerIdentity
    panes: tuple[PaneSnapshot, ...]

    def __iter__(self) -> Iterator[PaneSnapshot]:
        return iter(self.panes)

    @cached_property
    def _index(self) -> _PaneIndex:
        """Panes by id, surface, view and served view, built once on first lookup.

        Reconcile looks up every surface and view of the registry in one snapshot;
        a scan per lookup made that O(surfaces x panes) for 200 agents.
        """
        return _PaneIndex.of(self.panes)

    def pane(self, pane_id: str) -> PaneSnapshot | None:
        return self._index.by_id.get(pane_id)

    def by_surface(self, surface_id: str) -> PaneSnapshot | None:
        return self._index.by_surface.get(surface_id)

    def sessions(self) -> frozenset[str]:
        return frozenset(p.session_name for p in self.panes)

    def parked(self) -> tuple[PaneSnapshot, ...]:
        return tuple(p for p in self.panes if p.parked)

    def view(self, view_id: str) -> ViewLayout | None:
        """The layout of the view window tagged `view_id`, or None if it is gone."""
        in_view = self._index.in_view.get(view_id, [])
        windows = {(p.session_name, p.window_id) for p in in_view}
        if not windows:
            return None
        if len(windows) > 1:
            raise TopologyConflict(
                f"view {view_id} is tagged on {len(windows)} tmux windows; "
                "close the stray window or reconcile the view."
            )
        (session_name, window_id), = windows
        navigator = self._index.navigators.get(view_id)
        foreign = tuple(p for p in in_view if p.foreign)
        others = tuple(p for p in in_view if not p.foreign
                       and p.role is not PaneRole.NAVIGATOR and p.role is not PaneRole.STREAM)
        main = others[0] if len(others) == 1 else None
        in_window = navigator is not None and navigator.window_id == window_id
        mode = ViewMode.NAVIGATOR if in_window else ViewMode.DIRECT
        sample = in_view[0]
        zoomed = sample.zoomed if mode is ViewMode.NAVIGATOR else sample.zoom_memo
        return ViewLayout(
            view_id=view_id,
            session_name=session_name,
            window_id=window_id,
            mode=mode,
            zoomed=zoomed,
            main=main,
            navigator=navigator,
            extra_panes=others if main is None else (),
            foreign=foreign,
        )


def snapshot(runner: TmuxRunner) -> ServerSnapshot:
    """Identity plus all panes of the server in ONE tmux process."""
    output = runner.run([identity_command(), list_panes_command()])
    if not output.stdout:
        raise TmuxCommandFailed("tmux printed no identity")
    return ServerSnapshot(
        identity=ServerIdentity.parse(output.stdout[0]),
        panes=tuple(pane_lines(output.stdout[1:])),
    )


def checked_snapshot(runner: TmuxRunner, expected: ServerIdentity) -> ServerSnapshot:
    """One snapshot, refused (ServerIdentityMismatch) unless it is ``expected``'s."""
    snap = snapshot(runner)
    check_identity(expected, snap.identity)
    return snap


def tag_pane(
    runner: TmuxRunner, expected: ServerIdentity, pane_id: str, tags: Mapping[str, str]
) -> PaneSnapshot:
    """Set Switchboard pane user options (`set-option -p`) and re-read the pane."""
    commands: list[TmuxCommand] = []
    for name, value in tags.items():
        if not _TAG_NAME.match(name):
            raise ValueError(f"Switchboard tags are @sb_* pane options, not {name!r}")
        commands.append(("set-option", "-p", "-t", pane_id, name, check_tag_value(value)))
    output = run_guarded(runner, expected, [*commands, pane_state_command(pane_id)])
    return pane_lines(output.stdout)[-1]
