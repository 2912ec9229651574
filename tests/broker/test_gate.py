"""The delivery gate's verdicts, the one-time wording of a fenced pane, and the rule
that a managed Director is typed to while a hand-made fleet's Director never is."""

from __future__ import annotations

from pathlib import Path

from core.broker.broker import Broker, PlacementSpec
from core.broker.delivery import Notifier, NotNotified, PaneLocks, PaneServer, PaneTarget
from core.broker.membership import blocked_reason


def _row(**values: object) -> dict[str, object]:
    row = {"frame_state": "open", "surface": "live", "pane_id": "%5", "main_pane_id": "%5",
           "activity": "ready", "activity_reason": "turn_complete"}
    row.update(values)
    return row


def test_only_a_shown_ready_agent_in_its_own_pane_is_typed_into() -> None:
    assert blocked_reason(_row(), "%5") is None
    assert blocked_reason(None, "%5") == "its frame no longer exists"
    assert blocked_reason(_row(frame_state="closed"), "%5") == "its frame is closed"
    assert blocked_reason(_row(surface="retired"), "%5") == "its agent is not running"
    assert blocked_reason(_row(pane_id="%6"), "%5") == "its agent now runs in pane %6"
    assert blocked_reason(_row(main_pane_id="%2"), "%5").startswith("its pane is not shown")
    assert blocked_reason(_row(activity="working"), "%5").startswith("its agent is working")
    assert blocked_reason(_row(activity="needs_input", activity_reason="permission"),
                          "%5").startswith("its agent waits for the person (permission)")
    assert blocked_reason(_row(activity="unknown"), "%5") == \
        "its agent is unknown (only a Stop makes it ready)"


def test_fenced_pane_diagnostic_says_pending_once() -> None:
    text = NotNotified(3, 2, "%5", "pane %5 was not typed into: it is parked with input "
                                   "disabled; the message stays pending").diagnostic()
    assert text.count("stays pending") == 1, text


class _Typer:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def type_line(self, target: PaneTarget, line: str,
                  server: PaneServer | None = None) -> None:
        self.lines.append((target.pane, line))


class _Gate:
    def __init__(self, reason: str | None) -> None:
        self.reason = reason
        self.asked: list[str] = []

    def blocked(self, frame_id: str, target: PaneTarget) -> str | None:
        self.asked.append(frame_id)
        return self.reason

    def server_for(self, frame_id: str) -> PaneServer | None:
        return PaneServer("/tmp/views.sock", 1, 1)


def _fleet(tmp_path: Path, gate: _Gate | None, director_description: str
           ) -> tuple[Broker, _Typer, int, int]:
    from core.broker.broker import open_broker

    store = open_broker(tmp_path / "b.sqlite3")
    typer = _Typer()
    locks = PaneLocks(tmp_path / "locks")
    broker = Broker(store, notifier=Notifier(typer, locks, gate=gate), locks=locks)
    created = broker.create_fleet("f", director_name="ws",
                                  director_description=director_description,
                                  placement=PlacementSpec("s", "@1", "%1", "fake"))
    other = broker.register_member(created.fleet.fleet_id, "task", description="",
                                   placement=PlacementSpec("s", "@1", None, "fake"))
    return broker, typer, created.director.member.member_id, other.member.member_id


def test_managed_director_waits_for_the_gate_then_gets_one_line(tmp_path: Path) -> None:
    gate = _Gate("its pane is not shown (parked); it is typed when the frame is shown")
    broker, typer, director, task = _fleet(tmp_path, gate, "switchboard-frame:F1")
    first = broker.send(1, task, director, "one")
    assert first.delivery.deferred == gate.reason and typer.lines == []
    broker.send(1, task, director, "two")
    gate.reason = None
    report = broker._drain(director, set())
    assert report.notified == (first.message.message_id,)  # one line per ready period
    assert typer.lines == [("%1", f"[switchboard] message {first.message.message_id} from "
                                  "task: call message_poll() to read it, then "
                                  f"message_ack({first.message.message_id})")]
    assert gate.asked == ["F1", "F1", "F1"]
    broker.close()


def test_hand_made_director_is_never_typed_to(tmp_path: Path) -> None:
    broker, typer, director, task = _fleet(tmp_path, _Gate(None), "Director")
    result = broker.send(1, task, director, "one")
    assert typer.lines == [] and result.delivery.skipped.startswith("the root Director")
    broker.close()
