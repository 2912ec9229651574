"""The Projects panel: each project's open frames as a tree, closed ones under History.

The tree is reconciled against NavigatorState, not rebuilt: nodes are keyed
by entity id, a badge or title change only relabels its node, and a change in
a node's children re-lists only that node's children. Expansion, cursor and
scroll therefore survive every refresh. History is read-only: its frames can
be reopened (r) but never focused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from core.state.state_types import (
    FrameSummary,
    HostRow,
    NavigatorState,
    ProjectRow,
    ViewRow,
    qualified_key,
)
from navigator.widgets.badges import (
    BADGE_COMPONENT_CLASSES,
    BADGES,
    BadgeKind,
    badge_kind,
    badge_style,
)

#: Rendered lines the tree keeps per row it shows before dropping the stale ones.
LINE_CACHE_PER_ROW = 2

_NONTERMINAL = {"prepared", "executing", "presented", "awaiting_claim", "settling"}


class NodeKind(StrEnum):
    PROJECT = "project"
    FRAME = "frame"
    HISTORY = "history"
    EXTRA = "extra"
    """A pane someone split into the view's window, listed under its frame (Enter shows
    it in main, x closes it; ``core.reconcile.foreign``)."""


@dataclass(frozen=True)
class NodeRef:
    """What a tree node stands for; ``key`` is stable across refreshes."""

    kind: NodeKind
    key: str
    project_id: str
    project_name: str
    frame: FrameSummary | None = None
    badge: BadgeKind | None = None
    shown: bool = False  # the active frame of its project's view
    conflict: bool = False  # changed files overlap another open frame's (core.review)
    extra_id: str | None = None  # an EXTRA node's extra pane (frame stays None: no frame key)

    @property
    def frame_id(self) -> str | None:
        return self.frame.frame_id if self.frame is not None else None

    @property
    def in_history(self) -> bool:
        return self.frame is not None and self.frame.lifecycle_state == "closed"


@dataclass(frozen=True)
class _Spec:
    ref: NodeRef
    label: str
    children: tuple[_Spec, ...]


def project_key(project_id: str) -> str:
    """A project node's key from the project's row key (``NavigatorState.row_key``)."""
    return f"project:{project_id}"


def frame_key(frame_id: str) -> str:
    """A frame node's key from the frame's row key (``NavigatorState.row_key``), so two
    hosts' equal ids never share a node."""
    return f"frame:{frame_id}"


def history_key(project_id: str) -> str:
    return f"history:{project_id}"


def extra_key(extra_id: str) -> str:
    return f"extra:{extra_id}"


def frame_badge(frame: FrameSummary, host: HostRow | None, view: ViewRow | None) -> BadgeKind:
    """A frame's badge; the shown frame of a moving view shows the movement."""
    if host is not None and (host.reachability == "offline" or host.stale):
        return badge_kind(activity=None, runtime_presence=None, stale=host.stale,
                          reachability=host.reachability)
    if frame.lifecycle_state == "closing":
        return BadgeKind.IN_FLIGHT
    if view is not None and view.active_frame_id == frame.frame_id:
        if view.control_state == "uncertain":
            return BadgeKind.UNCERTAIN
        if view.transition_state in _NONTERMINAL:
            return BadgeKind.IN_FLIGHT
    session = frame.current_session
    return badge_kind(activity=session.activity if session else frame.activity,
                      runtime_presence=session.runtime_presence if session else None,
                      lifecycle=frame.lifecycle_state,
                      activity_reason=session.activity_reason if session else None)


def _title_order(frame: FrameSummary) -> tuple[str, str]:
    return (frame.title.casefold(), frame.frame_id)


SpecCache = dict[str, tuple[tuple[object, ...], "_Spec | None"]]


CONFLICT_MARK = "⚠"
"""After a frame's title when its changed files overlap another open frame's."""


def build_specs(projects: Iterable[ProjectRow], state: NavigatorState | None,
                filter_text: str = "", cache: SpecCache | None = None,
                conflicted: frozenset[str] = frozenset()) -> list[_Spec]:
    """The desired tree, as plain data (kept apart from widgets so it is cheap to test).

    With ``cache``, a project whose inputs (its row, host row, view row, filter)
    equal last time's returns the very same spec object, which the tree then
    skips: one frame's badge change rebuilds one project, not a thousand frames.
    """
    needle = filter_text.strip().casefold()
    # Ids are unique per host only: a view shows a project of its own host.
    view_of_project: dict[tuple[str, str], ViewRow] = {}
    if state is not None:
        for view in state.views:
            if view.state != "retired" and view.active_project_id:
                view_of_project[(view.host_id, view.active_project_id)] = view
    specs = []
    for project in projects:
        host = state.host_row(project.host_id) if state is not None else None
        remote = state is not None and project.host_id != state.local_host_id
        key = state.row_key(project.host_id, project.project_id) if state is not None \
            else project.project_id
        # node keys depend on which ids other hosts hold too (``NavigatorState.row_key``)
        qualified = frozenset(
            f.frame_id for f in project.frames
            if state.row_key(project.host_id, f.frame_id) != f.frame_id) \
            if state is not None and remote else frozenset()
        shown_in = view_of_project.get((project.host_id, project.project_id))
        # host.observed_at moves on every build; only what the subtree shows counts
        host_shown = (host.display_name, host.stale, host.reachability) if host else None
        # changed files are this host's: another host's frame never overlaps them
        marked = conflicted.intersection(f.frame_id for f in project.frames) \
            if conflicted and not remote else frozenset()
        inputs = (project, host_shown, shown_in, needle, remote, marked, key, qualified)
        cached = cache.get(key) if cache is not None else None
        if cached is not None and cached[0] == inputs:
            spec = cached[1]
        else:
            spec = _project_spec(project, host, shown_in, needle, remote, marked,
                                 key=key, qualified=qualified)
            if cache is not None:
                cache[key] = (inputs, spec)
        if spec is not None:
            specs.append(spec)
    return specs


def _project_spec(project: ProjectRow, host: HostRow | None, view: ViewRow | None,
                  needle: str, remote: bool,
                  conflicted: frozenset[str] = frozenset(), *,
                  key: str | None = None,
                  qualified: frozenset[str] = frozenset()) -> _Spec | None:
    """One project's subtree: open frames by parent, then a History node of closed ones.

    Node keys and ``NodeRef.project_id`` are row keys (``NavigatorState.row_key``):
    ``key`` is the project's, and a frame in ``qualified`` is known as ``HOST/ID``
    (another host's row holds its id), so two hosts' equal ids never share a node."""
    project_ref = key if key is not None else project.project_id

    def frame_ref(frame_id: str) -> str:
        return qualified_key(project.host_id, frame_id) if frame_id in qualified else frame_id
    live = [f for f in project.frames if f.lifecycle_state != "closed"]
    closed = sorted((f for f in project.frames if f.lifecycle_state == "closed"),
                    key=_title_order)
    live_ids = {f.frame_id for f in live}
    children_of: dict[str | None, list[FrameSummary]] = {}
    for frame in live:
        parent = frame.parent_frame_id if frame.parent_frame_id in live_ids else None
        children_of.setdefault(parent, []).append(frame)
    for siblings in children_of.values():
        siblings.sort(key=lambda f: (f.role != "workspace", *_title_order(f)))
    project_matches = not needle or needle in project.name.casefold()

    def ref_for(frame: FrameSummary) -> NodeRef:
        return NodeRef(NodeKind.FRAME, frame_key(frame_ref(frame.frame_id)), project_ref,
                       project.name, frame, frame_badge(frame, host, view),
                       view is not None and view.active_frame_id == frame.frame_id,
                       frame.frame_id in conflicted and frame.lifecycle_state != "closed")

    def subtree(frame: FrameSummary) -> _Spec | None:
        kids = tuple(s for s in (subtree(c) for c in children_of.get(frame.frame_id, ()))
                     if s is not None)
        if not kids and not (project_matches or needle in frame.title.casefold()):
            return None
        extras = tuple(_Spec(NodeRef(NodeKind.EXTRA, extra_key(e.extra_pane_id), project_ref,
                                     project.name, extra_id=e.extra_pane_id),
                             f"extra pane: {e.command or '?'}", ())
                       for e in frame.extra_panes or ()) if not remote else ()
        return _Spec(ref_for(frame), frame.title + subagents_suffix(frame), extras + kids)

    children = [s for s in (subtree(f) for f in children_of.get(None, ())) if s is not None]
    history = [_Spec(ref_for(f), f.title, ()) for f in closed
               if project_matches or needle in f.title.casefold()]
    if history:
        children.append(_Spec(
            NodeRef(NodeKind.HISTORY, history_key(project_ref), project_ref,
                    project.name), f"History ({len(history)})", tuple(history)))
    if not children and not project_matches:
        return None
    label = project.name if not live else f"{project.name}  {len(live)} open"
    if remote and host is not None:
        label += f"  @{host.display_name}"
    return _Spec(NodeRef(NodeKind.PROJECT, project_key(project_ref), project_ref,
                         project.name), label, tuple(children))


def subagents_suffix(frame: FrameSummary) -> str:
    """``  · 2 subagents``: the live session's running subagents (issue 39 item 4), or
    nothing."""
    count = frame.current_session.subagents if frame.current_session else None
    if not count:
        return ""
    return f"  · {count} subagent{'' if count == 1 else 's'}"


class FrameTree(Tree[NodeRef]):
    """Data in: ``navigator_state`` (+ ``filter_text``); intent out: nested messages."""

    COMPONENT_CLASSES = BADGE_COMPONENT_CLASSES | {"frame-tree--shown", "frame-tree--history",
                                                   "frame-tree--project"}
    BINDINGS = [
        Binding("enter", "select_cursor", "Focus", show=True),
        Binding("space", "toggle_node", "Fold", show=False),
    ]

    navigator_state: reactive[NavigatorState | None] = reactive(None, always_update=True,
                                                               repaint=False)
    filter_text: reactive[str] = reactive("")
    conflicted: reactive[frozenset[str]] = reactive(frozenset())
    """Open frames whose changed files overlap another open frame's (set by the app)."""

    @dataclass
    class FocusRequested(Message):
        """Show this open frame in its project's view (navigation only)."""

        frame_id: str
        project_id: str

    @dataclass
    class ProjectEnterRequested(Message):
        """Enter this project: the engine picks the frame to show."""

        project_id: str
        project_name: str

    @dataclass
    class ExtraPaneRequested(Message):
        """Enter on an extra pane: show it in main (again: its frame's agent)."""

        extra_id: str

    @dataclass
    class HistorySelected(Message):
        """A closed frame was chosen: it can only be reopened."""

        frame_id: str
        title: str

    class LayoutChanged(Message):
        """Expansion changed; the app persists UI state."""

    def __init__(self, *, id: str | None = None) -> None:
        # A Text root label: Tree parses a str label as Rich markup, whose emoji
        # replacement imports Rich's emoji table (~0.7 MB of every navigator).
        super().__init__(Text("projects"), id=id)
        self.show_root = False
        self.auto_expand = False
        self.guide_depth = 2
        self.border_title = "Projects"
        self.collapsed: set[str] = set()
        self._node_by_key: dict[str, TreeNode[NodeRef]] = {}
        self._spec_cache: SpecCache = {}
        self._applied: dict[str, _Spec] = {}
        self._extra_projects: tuple[ProjectRow, ...] = ()
        self._usage: dict[str, str] = {}
        """frame id -> its usage in a few cells (``u`` shows it; empty while hidden)."""

    # ------------------------------------------------------------------ data in

    def set_configured_projects(self, projects: Iterable[ProjectRow]) -> None:
        """Projects known to config but not yet entered (so they are in no state yet)."""
        self._extra_projects = tuple(projects)
        self._reconcile()

    def set_usage(self, usage: dict[str, str]) -> None:
        """Each frame's usage after its title (tokens and estimated cost), or none."""
        if usage != self._usage:
            self._usage = dict(usage)
            self._invalidate()  # every line's width and text change

    def _projects(self) -> list[ProjectRow]:
        state = self.navigator_state
        present = list(state.projects) if state is not None else []
        known = {(p.host_id, p.project_id) for p in present}
        present += [p for p in self._extra_projects if (p.host_id, p.project_id) not in known]
        return sorted(present, key=lambda p: (p.name.casefold(), p.project_id, p.host_id))

    def watch_navigator_state(self) -> None:
        self._reconcile()

    def watch_filter_text(self) -> None:
        self._reconcile()

    def watch_conflicted(self) -> None:
        self._reconcile()

    def _reconcile(self) -> None:
        if self.navigator_state is None and not self._extra_projects:
            return
        cursor_key = self.selected_ref.key if self.selected_ref is not None else None
        specs = build_specs(self._projects(), self.navigator_state, self.filter_text,
                            self._spec_cache, self.conflicted)
        structural = self._sync_children(self.root, specs, top=True)
        if structural:
            _ = self.last_line  # rebuild line numbers before moving the cursor
            if cursor_key is not None and cursor_key in self._node_by_key:
                self.move_cursor(self._node_by_key[cursor_key])
            elif self.cursor_line < 0 and self._node_by_key:
                self.cursor_line = 0

    def _sync_children(self, parent: TreeNode[NodeRef], specs: list[_Spec] | tuple[_Spec, ...],
                       *, top: bool = False) -> bool:
        """Reconcile one level; returns whether any structure changed below ``parent``."""
        current = [child.data.key for child in parent.children if child.data is not None]
        wanted = [spec.ref.key for spec in specs]
        if top:
            applied, self._applied = self._applied, {spec.ref.key: spec for spec in specs}
        if current == wanted:
            changed = False
            for node, spec in zip(parent.children, specs, strict=True):
                if top and applied.get(spec.ref.key) is spec:
                    continue  # the same spec object as last time: nothing below changed
                if node.data != spec.ref or str(node.label) != spec.label:
                    node.data = spec.ref
                    node.set_label(Text(spec.label))
                had_children = bool(node.children)
                changed = self._sync_children(node, spec.children) or changed
                if spec.children and not had_children:
                    node.allow_expand = True
                    if spec.ref.key not in self.collapsed:
                        node.expand()
                elif not spec.children and had_children:
                    node.allow_expand = False
            return changed
        for child in list(parent.children):
            self._forget(child)
        parent.remove_children()
        for spec in specs:
            self._add(parent, spec)
        return True

    def _forget(self, node: TreeNode[NodeRef]) -> None:
        if node.data is not None:
            self._node_by_key.pop(node.data.key, None)
        for child in node.children:
            self._forget(child)

    def _add(self, parent: TreeNode[NodeRef], spec: _Spec) -> None:
        expand = bool(spec.children) and (spec.ref.key not in self.collapsed
                                          or bool(self.filter_text))
        if spec.children:
            node = parent.add(Text(spec.label), spec.ref, expand=expand)
        else:
            node = parent.add_leaf(Text(spec.label), spec.ref)
        self._node_by_key[spec.ref.key] = node
        for child in spec.children:
            self._add(node, child)

    # ------------------------------------------------------------------ rendering

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's Tree caches each rendered line under its node's update count, so
        every relabel (a badge change, on every hook) leaves the old line behind until
        1024 are held, ~2 KB each with the crops the compositor caches on them: a
        long-lived navigator grew by ~2 MB. Once the stale lines outnumber
        ``LINE_CACHE_PER_ROW`` per row shown, they go; the rows then drawn are cached
        anew (their lines were redrawn for the relabel anyway)."""
        cache = self._line_cache
        if len(cache) > LINE_CACHE_PER_ROW * max(self.size.height, 1):
            cache.clear()
        return super().render_lines(crop)

    def render_label(self, node: TreeNode[NodeRef], base_style: Style, style: Style) -> Text:
        """Fold icon, then the badge (symbol and theme colour), then the title."""
        ref = node.data
        label = node._label.copy()
        if ref is not None:
            component = {NodeKind.PROJECT: "frame-tree--project",
                         NodeKind.HISTORY: "frame-tree--history"}.get(ref.kind)
            if ref.in_history:
                component = "frame-tree--history"
            elif ref.shown:
                component = "frame-tree--shown"
                label.append(" ◂")
            if ref.conflict:
                label.append(f" {CONFLICT_MARK}", style="bold")
            usage = self._usage_of(ref)
            if usage is not None:
                label.append(f"  {usage}", style="dim")
            if component:
                label.stylize(self.get_component_rich_style(component, partial=True))
        label.stylize(style)
        parts: list[Text | tuple[str, Style]] = []
        if node.allow_expand:
            icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
            parts.append((icon, base_style + TOGGLE_STYLE))
        if ref is not None and ref.badge is not None:
            parts.append((BADGES[ref.badge].symbol + " ", badge_style(self, ref.badge)))
        parts.append(label)
        return Text.assemble(*parts)

    def get_label_width(self, node: TreeNode[NodeRef]) -> int:
        """Width without rendering: the tree measures every line on each rebuild."""
        ref = node.data
        width = node._label.cell_len
        if node.allow_expand:
            width += cell_len(self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE)
        if ref is not None and ref.badge is not None:
            width += cell_len(BADGES[ref.badge].symbol) + 1
        if ref is not None and ref.shown and not ref.in_history:
            width += 2
        if ref is not None and ref.conflict:
            width += 1 + cell_len(CONFLICT_MARK)
        usage = self._usage_of(ref) if ref is not None else None
        if usage is not None:
            width += 2 + cell_len(usage)
        return width

    def _usage_of(self, ref: NodeRef) -> str | None:
        """A frame's usage figure, by frame id: figures are this host's, and another
        host's frame reusing a local id is keyed ``HOST/ID`` (so it shows none)."""
        if ref.frame is None or ref.key != frame_key(ref.frame.frame_id):
            return None
        return self._usage.get(ref.frame.frame_id)

    # ------------------------------------------------------------------ selection

    @property
    def selected_ref(self) -> NodeRef | None:
        node = self.cursor_node
        return node.data if node is not None else None

    @property
    def cursor_key(self) -> str | None:
        ref = self.selected_ref
        return ref.key if ref is not None else None

    def select_key(self, key: str | None) -> bool:
        """Put the cursor on a node by key (used to restore UI state)."""
        node = self._node_by_key.get(key or "")
        if node is None:
            return False
        ancestor = node.parent
        while ancestor is not None and not ancestor.is_root:
            ancestor.expand()
            ancestor = ancestor.parent
        _ = self.last_line
        self.move_cursor(node)
        return True

    def apply_collapsed(self, keys: Iterable[str]) -> None:
        """Restore folded nodes from UI state."""
        self.collapsed = set(keys)
        for key in self.collapsed:
            node = self._node_by_key.get(key)
            if node is not None and node.is_expanded:
                node.collapse()

    def select_first_match(self) -> bool:
        """After a search: put the cursor on the first frame whose title matches the
        filter (tree order), else the first project that does."""
        needle = self.filter_text.strip().casefold()
        if not needle:
            return False
        frames = [(k, n.data) for k, n in self._node_by_key.items() if n.data is not None]
        for want_frame in (True, False):
            for key, ref in frames:
                title = ref.frame.title if ref.frame is not None else ref.project_name
                if (ref.frame is not None) == want_frame and needle in title.casefold():
                    return self.select_key(key)
        return False

    def frame_nodes(self) -> dict[str, TreeNode[NodeRef]]:
        return dict(self._node_by_key)

    def on_tree_node_selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        event.stop()
        ref = event.node.data
        if ref is None:
            return
        if ref.kind is NodeKind.PROJECT:
            self.post_message(self.ProjectEnterRequested(ref.project_id, ref.project_name))
        elif ref.kind is NodeKind.HISTORY:
            event.node.toggle()
        elif ref.kind is NodeKind.EXTRA and ref.extra_id is not None:
            self.post_message(self.ExtraPaneRequested(ref.extra_id))
        elif ref.frame is not None and ref.in_history:
            self.post_message(self.HistorySelected(ref.frame.frame_id, ref.frame.title))
        elif ref.frame is not None:
            self.post_message(self.FocusRequested(ref.frame.frame_id, ref.project_id))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeRef]) -> None:
        event.stop()
        if event.node.data is not None and event.node.data.key in self.collapsed:
            self.collapsed.discard(event.node.data.key)
            self.post_message(self.LayoutChanged())

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[NodeRef]) -> None:
        event.stop()
        if event.node.data is not None and event.node.data.key not in self.collapsed:
            self.collapsed.add(event.node.data.key)
            self.post_message(self.LayoutChanged())
