"""Panels, palette, refresh and UI state against a real registry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from core.context.requests import new_request_id
from navigator.app import SwitchboardApp
from navigator.widgets.breadcrumb import Breadcrumb
from navigator.widgets.frames import (
    LINE_CACHE_PER_ROW,
    FrameTree,
    NodeKind,
    frame_key,
    history_key,
)
from navigator.widgets.inbox import InboxList
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.views import ViewList
from tests.navigator.helpers import notices, select_frame, settle, tree, wait_until
from tests.navigator.scenario import Scenario, push_and_claim

SIZE = (80, 24)


async def test_projects_panel_shows_open_frames_and_read_only_history(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        nodes = tree(app).frame_nodes()
        workspace = nodes[frame_key(demo.frames["alpha"])]
        children = {n.data.frame_id for n in workspace.children if n.data is not None}
        assert children == {demo.frames["Fix login"], demo.frames["Write docs"]}
        spike = nodes[frame_key(demo.frames["Old spike"])]
        assert spike.parent is not None and spike.parent.data is not None
        assert spike.parent.data.kind is NodeKind.HISTORY
        badges = {title: nodes[frame_key(demo.frames[title])].data.badge
                  for title in ("alpha", "Fix login", "Write docs", "Old spike")}
        assert badges == {"alpha": "stopped", "Fix login": "working",
                          "Write docs": "needs_input", "Old spike": "closed"}
        assert nodes[frame_key(demo.frames["alpha"])].data.shown  # active in its view


async def test_views_panel_selects_the_view_keys_act_on(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        views = app.query_one(ViewList)
        views.focus()
        views.highlight_key(demo.views["beta"])
        await pilot.pause()
        assert app.query_one(Breadcrumb).view.view_id == demo.views["beta"]
        await pilot.press("enter")  # enter the view's project: already shown, no move
        await settle(pilot)
        assert app.current_view_id == demo.views["beta"]
        await pilot.press("m")
        await settle(pilot)
    assert demo.view_row("beta")["mode"] == "direct"
    assert demo.view_row("alpha")["mode"] == "navigator"


async def test_recoveries_panel_lists_open_recoveries_with_actionability(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(RecoveryList)
        assert panel.border_title == "Recoveries (1)"
        assert panel.has_class("-has-recoveries")
        prompt = str(panel.get_option(demo.recoveries[0]).prompt)
        assert "R fixes" in prompt and "pane_vanished" in prompt
        panel.focus()
        await pilot.press("enter")  # enter = recover, same as R
        await settle(pilot)
        assert panel.border_title == "Recoveries"
    state = demo.engine.conn.execute("SELECT state FROM recoveries").fetchone()[0]
    assert state == "resolved"


async def test_manual_recovery_explains_instead_of_acting(demo: Scenario) -> None:
    from core.model.enums import Actionability, RecoveryKind
    from tests.navigator.scenario import add_recovery

    manual = add_recovery(demo, "Write docs", RecoveryKind.TRANSITION_INTERRUPTED,
                          Actionability.MANUAL, "Check the pane by hand, then resolve it.")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(RecoveryList)
        panel.focus()
        panel.highlight_key(manual)
        await pilot.press("R")
        await settle(pilot)
        errors = [m for s, m in notices(app) if s == "error"]
        assert errors and "Check the pane by hand" in errors[-1]
    state = demo.engine.conn.execute("SELECT state FROM recoveries WHERE recovery_id = ?",
                                     (manual,)).fetchone()[0]
    assert state == "open"


@dataclass(frozen=True)
class _Message:
    message_id: int
    sender: str
    text: str


class _InboxClient:
    """The real client with a broker inbox stand-in (the broker is tested on its own)."""

    def __init__(self, scenario: Scenario) -> None:
        self._client = scenario.client
        self.messages = [_Message(7, "director", "please review\nthe login fix")]
        self.acked: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def inbox(self, view_id: str) -> list[_Message]:
        return list(self.messages)

    def ack(self, message_id: Any) -> None:
        self.acked.append(message_id)
        self.messages = [m for m in self.messages if m.message_id != message_id]
        self._client.engine.conn.execute("PRAGMA user_version")  # no registry change


async def test_inbox_panel_lists_and_acknowledges(demo: Scenario) -> None:
    client = _InboxClient(demo)
    app = SwitchboardApp(client)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        inbox = app.query_one(InboxList)
        assert inbox.border_title == "Inbox (1)"
        assert str(inbox.get_option("7").prompt) == "director: please review the login fix"
        inbox.focus()
        await pilot.press("a")
        await settle(pilot)
        assert client.acked == [7]
        assert inbox.border_title == "Inbox"


async def test_inbox_says_when_the_broker_is_unavailable(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        inbox = app.query_one(InboxList)
        if inbox.unavailable is None:  # broker present: it lists (possibly nothing)
            assert inbox.highlighted_key is None or inbox.messages
        else:
            assert "inbox unavailable" in inbox.unavailable


async def test_palette_focuses_a_frame_by_name(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Focus frame Write docs")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
    assert demo.view_row("alpha")["active_frame_id"] == demo.frames["Write docs"]


async def test_palette_lists_every_action(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = {command.title for command in app.get_system_commands(app.screen)}
        for title in ("Start", "Stop", "Back", "Complete", "Close", "Reopen", "Mode",
                      "Recover", "Details", "Search", "Help", "Open recovery",
                      "Dismiss recovery"):
            assert title in titles
        # offered only with a message to act on (this scenario's inbox is empty)
        assert "Acknowledge message" not in titles


async def test_registry_changes_from_outside_refresh_incrementally(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, poll_interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        frames = tree(app)
        before = frames.frame_nodes()
        fix_login = before[frame_key(demo.frames["Fix login"])]
        # another process (the CLI, a hook) changes the registry
        new_frame = push_and_claim(demo, "alpha", "Hotfix")
        # the next poll sees it (a loaded machine may take more than a few polls)
        await wait_until(pilot, lambda: frame_key(new_frame) in frames.frame_nodes(), 15)
        await settle(pilot)
        after = frames.frame_nodes()
        assert frame_key(new_frame) in after
        assert after[frame_key(new_frame)].data.shown
        # untouched projects keep their node objects: reconciled, not rebuilt
        assert after[frame_key(demo.frames["beta"])] is before[frame_key(demo.frames["beta"])]
        assert after[frame_key(demo.frames["alpha"])] is before[frame_key(demo.frames["alpha"])]
        assert fix_login.data.frame_id == demo.frames["Fix login"]


async def test_unchanged_registry_is_not_rebuilt(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, poll_interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        state = app.navigator_state
        await pilot.pause(0.3)
        assert app.navigator_state is state  # polls saw the same data_version


async def test_ui_state_survives_a_restart(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        frames = tree(app)
        beta = frames.frame_nodes()[f"project:{demo.engine.config.projects[1].project_id}"]
        beta.collapse()
        frames.frame_nodes()[history_key(demo.engine.config.projects[0].project_id)].collapse()
        await pilot.pause()
    saved = json.loads((demo.home.root / "ui_state.json").read_text())
    mine = saved["navigators"]["default"]
    assert mine["tree_cursor"] == frame_key(demo.frames["Write docs"])
    assert mine["panel"] == "projects"

    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        frames = app.query_one(FrameTree)
        assert frames.cursor_key == frame_key(demo.frames["Write docs"])
        assert app.focused is frames
        beta = frames.frame_nodes()[f"project:{demo.engine.config.projects[1].project_id}"]
        assert not beta.is_expanded
        history = frames.frame_nodes()[history_key(demo.engine.config.projects[0].project_id)]
        assert not history.is_expanded


async def test_ui_state_is_kept_per_view(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, view_id=demo.views["beta"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "beta")
        await pilot.pause()
        # a navigator bound to beta acts on beta whatever is selected
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("m")
        await settle(pilot)
    assert demo.view_row("beta")["mode"] == "direct"
    assert demo.view_row("alpha")["mode"] == "navigator"
    saved = json.loads((demo.home.root / "ui_state.json").read_text())
    assert list(saved["navigators"]) == [demo.views["beta"]]


async def test_narrow_sidebar_stacks_every_panel(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(40, 40)) as pilot:
        await settle(pilot)
        assert app.screen.has_class("-narrow")
        for panel in ("#views", "#projects", "#recoveries", "#inbox"):
            region = app.query_one(panel).region
            assert region.width == 40 and region.height >= 3, panel
        assert app.query_one("#views").region.y < app.query_one("#projects").region.y \
            < app.query_one("#recoveries").region.y < app.query_one("#inbox").region.y
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.has_class("-wide")
        assert app.query_one("#recoveries").region.x > app.query_one("#projects").region.x


async def test_a_refused_request_becomes_a_notification(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, poll_interval=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        demo.engine.frame_close(new_request_id(), demo.frames["Write docs"])
        # the app has not refreshed yet: it still shows Write docs as open
        await select_frame(pilot, demo, "Write docs")
        await pilot.press("n")
        await settle(pilot)
        errors = [m for s, m in notices(app) if s == "error"]
        assert errors and "reopen it first" in errors[-1], notices(app)
        assert "Traceback" not in errors[-1]
        assert app.is_running
    assert demo.frame_row("Write docs")["lifecycle_state"] == "closed"


async def test_cached_remote_host_is_shown_but_never_acted_on(demo: Scenario) -> None:
    from dataclasses import replace

    from core.state.state_types import FrameSummary, HostRow, ProjectRow

    remote_host = "44444444-4444-4444-8444-444444444444"
    remote_frame = "55555555-5555-4555-8555-555555555555"
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        local = app.navigator_state
        assert local is not None
        app.navigator_state = replace(
            local,
            hosts=(*local.hosts, HostRow(host_id=remote_host, display_name="buildbox",
                                         generation_id=remote_host, stale=True,
                                         reachability="offline")),
            projects=(*local.projects, ProjectRow(
                project_id="66666666-6666-4666-8666-666666666666", host_id=remote_host,
                name="gamma", frames=(FrameSummary(
                    frame_id=remote_frame, title="gamma", role="workspace",
                    lifecycle_state="open", activity="working", session_count=1),))))
        await pilot.pause()
        node = tree(app).frame_nodes()[frame_key(remote_frame)]
        assert node.data.badge == "offline"
        assert "@buildbox" in str(node.parent.label)
        tree(app).focus()
        tree(app).select_key(frame_key(remote_frame))
        await pilot.press("n")
        await settle(pilot)
        assert any("read-only cache" in m for _, m in notices(app))
        assert not [m for s, m in notices(app) if s == "error"]  # no request was sent


def test_unknown_activity_has_its_own_badge_never_ready() -> None:
    from navigator.app import stylesheet_path
    from navigator.widgets.badges import BADGES, BadgeKind, badge_kind

    assert badge_kind(activity="unknown", runtime_presence="live") is BadgeKind.UNKNOWN
    assert badge_kind(activity=None, runtime_presence="live") is BadgeKind.UNKNOWN
    assert badge_kind(activity="ready", runtime_presence="live") is BadgeKind.READY
    assert badge_kind(activity="unknown", runtime_presence="stopped") is BadgeKind.STOPPED
    symbols = [badge.symbol for badge in BADGES.values()]
    assert len(set(symbols)) == len(symbols)  # never colour alone
    assert f".{BADGES[BadgeKind.UNKNOWN].component_class} " in stylesheet_path().read_text()


async def test_unknown_activity_reads_the_same_in_the_tree_and_views(demo: Scenario) -> None:
    from core.model.enums import Activity
    from navigator.widgets.badges import BadgeKind
    from navigator.widgets.views import view_badge
    from tests.navigator.scenario import set_activity

    set_activity(demo, "Write docs", Activity.UNKNOWN, "live")  # no needs_input left
    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        node = tree(app).frame_nodes()[frame_key(demo.frames["Write docs"])]
        assert node.data.badge is BadgeKind.UNKNOWN
        state = app.navigator_state
        alpha = app.query_one(ViewList).view(demo.views["alpha"])
        assert alpha is not None and alpha.activity == "unknown"
        frame = next(f for p in state.projects for f in p.frames
                     if f.frame_id == demo.frames["Write docs"])
        assert view_badge(alpha, state.host_row(alpha.host_id), frame) is BadgeKind.UNKNOWN
        prompt = str(app.query_one(ViewList).get_option(demo.views["alpha"]).prompt)
        assert prompt.startswith("○ ")


async def test_footer_shows_every_app_key_without_cutting_any(demo: Scenario) -> None:
    from navigator.widgets.footer import KeyFooter

    for size in ((40, 40), SIZE):
        app = SwitchboardApp(demo.client)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.pause(0.2)  # the footer follows the bindings once they settle
            footer = app.query_one(KeyFooter)
            keys = {placed.entry.key: placed for placed in footer.shown}
            for binding in app.BINDINGS:
                if binding.show:  # escape (clear a kept search filter) is contextual
                    assert binding.key in keys, (size, binding.key)
            region = footer.region
            for placed in keys.values():
                assert placed.width > 0 and placed.row < region.height, (size, placed)
                assert region.x + placed.x + placed.width <= size[0], (size, placed)  # none cut
            # every key is drawn where it is placed: its text is on the screen in its row
            lines = [app.screen.get_widget_at(region.x, region.y + row)[0]
                     for row in range(region.height)]
            assert all(widget is footer for widget in lines), lines
            for placed in keys.values():
                line = footer.render_line(placed.row).text
                drawn = line[placed.x:placed.x + placed.width]
                assert placed.entry.display in drawn and placed.entry.description in drawn, \
                    (size, drawn, placed)


async def test_a_click_on_a_footer_key_presses_it(demo: Scenario) -> None:
    from navigator.screens.help import HelpScreen
    from navigator.widgets.footer import KeyFooter

    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        footer = app.query_one(KeyFooter)
        help_key = next(p for p in footer.shown if p.entry.action == "help")
        before = app.export_screenshot()
        await pilot.hover(KeyFooter, offset=(help_key.x + 1, help_key.row))
        await pilot.pause(0.1)
        assert footer.tooltip == (help_key.entry.tooltip or None)
        assert app.export_screenshot() != before  # the hovered key lights up
        await pilot.click(KeyFooter, offset=(help_key.x + 1, help_key.row))
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)


async def test_palette_acknowledges_the_selected_message(demo: Scenario) -> None:
    client = _InboxClient(demo)
    app = SwitchboardApp(client)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Acknowledge message")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
    assert client.acked == [7]


def test_a_degraded_view_has_its_own_badge_not_needs_input(demo: Scenario) -> None:
    from dataclasses import replace

    from core.model.enums import ViewState
    from navigator.widgets.badges import BADGES, BadgeKind
    from navigator.widgets.views import view_badge

    state = demo.client.state()
    view = next(v for v in state.views if v.view_id == demo.views["alpha"])
    degraded = replace(view, state=ViewState.DEGRADED, attention=True, activity="working")
    assert view_badge(degraded, state.host_row(view.host_id)) is BadgeKind.DEGRADED
    asking = replace(degraded, activity="needs_input")  # an agent asking still says so
    assert view_badge(asking, state.host_row(view.host_id)) is BadgeKind.NEEDS_INPUT
    assert BADGES[BadgeKind.DEGRADED].symbol != BADGES[BadgeKind.NEEDS_INPUT].symbol


async def test_relabels_do_not_pile_up_rendered_lines(demo: Scenario) -> None:
    """A badge change relabels a node; Textual's Tree kept each old line (~2 KB) up to
    1024 of them. The tree keeps a few screenfuls, and still draws the newest label."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(40, 30)) as pilot:
        await settle(pilot)
        frames = tree(app)
        node = next(n for n in frames._node_by_key.values() if n.data is not None
                    and n.data.kind is NodeKind.FRAME)
        rows = frames.size.height
        held = []
        for turn in range(300):
            node.set_label(Text(f"relabel {turn % 2}"))
            await pilot.pause()
            held.append(len(frames._line_cache))
        assert max(held) <= (LINE_CACHE_PER_ROW + 1) * rows, held
        drawn = frames.render_line(node.line - round(frames.scroll_y)).text
        assert "relabel 1" in drawn, drawn
