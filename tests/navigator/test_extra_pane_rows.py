"""The Projects tree lists a frame's extra panes (issue 39 item 3) and routes Enter and x
on such a row to that pane, never to the frame (a real registry, the real app)."""

from __future__ import annotations

from navigator.app import SwitchboardApp
from navigator.widgets.frames import NodeKind, extra_key, frame_key
from storage.connection import write_transaction
from storage.operations import extra_panes as extra_ops
from storage.operations import servers as servers_ops
from tests.navigator.helpers import notices, settle, tree, wait_until
from tests.navigator.scenario import Scenario

SIZE = (80, 24)
EXTRA_ID = "70000000-0000-4000-8000-000000000001"


def _record_extra(demo: Scenario, frame_title: str) -> None:
    """What reconcile records after moving a split pane out of the view's window; its
    server is not the view's, so acting on it is refused (this registry has no tmux)."""
    engine = demo.engine
    view_id = engine.conn.execute("SELECT view_id FROM user_views LIMIT 1").fetchone()[0]
    with write_transaction(engine.conn) as conn:
        servers_ops.insert_tmux_server(conn, tmux_server_id="srv-extra", host_id=engine.host_id,
                                       socket_path="/nonexistent/sock", server_pid=1,
                                       server_start_time=1, now=engine.now())
        extra_ops.record_extra_pane(conn, extra_pane_id=EXTRA_ID, host_id=engine.host_id,
                                    view_id=view_id, frame_id=demo.frames[frame_title],
                                    tmux_server_id="srv-extra", pane_id="%99",
                                    command="sleep", now=engine.now())


async def test_an_extra_pane_is_listed_under_its_frame_and_x_never_closes_the_frame(
        demo: Scenario) -> None:
    _record_extra(demo, "alpha")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        nodes = tree(app).frame_nodes()
        row = nodes[extra_key(EXTRA_ID)]
        assert row.parent is nodes[frame_key(demo.frames["alpha"])]
        assert str(row.label) == "extra pane: sleep"
        assert row.data.kind is NodeKind.EXTRA and row.data.frame is None

        tree(app).focus()
        assert tree(app).select_key(extra_key(EXTRA_ID))
        await pilot.pause()
        await pilot.press("x")  # the pane, not the task: no "Close task?" dialog
        await wait_until(pilot, lambda: any("extra pane" in m for _, m in notices(app)))
        assert type(app.screen).__name__ != "ConfirmScreen"
        assert any(sev == "error" and "tmux server is not the view's" in m
                   for sev, m in notices(app)), notices(app)
        assert demo.engine.conn.execute("SELECT lifecycle_state FROM frames WHERE frame_id = ?",
                                        (demo.frames["alpha"],)).fetchone()[0] == "open"

        await pilot.press("enter")  # Enter reaches the pane's own request too
        await settle(pilot)
        assert sum("tmux server is not the view's" in m for _, m in notices(app)) == 2
