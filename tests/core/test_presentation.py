"""PresentationDirective v1 from `view open`: focus, attach with one lease, blocked."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.engine import Engine
from core.engine.presentation import LEASE_MS, open_view
from core.model.enums import DirectiveKind
from core.state.envelope import decode_checked, encode_canonical
from core.state.state_types import PresentationDirective
from tests.factories import make_engine

FIRST = "aaaaaaaa-0000-4000-8000-000000000001"
SECOND = "aaaaaaaa-0000-4000-8000-000000000002"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return make_engine(tmp_path)


def _leases(engine: Engine) -> list[tuple]:
    return [tuple(r) for r in engine.conn.execute(
        "SELECT request_id, state, expires_at FROM desktop_attachment_leases ORDER BY rowid")]


def test_focus_when_the_desktop_can_focus(engine: Engine) -> None:
    directive = open_view(engine, FIRST, "alpha", desktop_focus_available=True)
    assert directive.kind is DirectiveKind.FOCUS
    view = engine.conn.execute("SELECT * FROM user_views").fetchone()
    assert (directive.view_id, directive.view_revision, directive.desktop_token) == (
        view["view_id"], view["revision"], view["desktop_token"])
    assert directive.lease_expires_at is None and _leases(engine) == []


def test_focus_miss_retry_reuses_the_request_and_gets_the_one_lease(engine: Engine) -> None:
    focus = open_view(engine, FIRST, "alpha", desktop_focus_available=True)
    revision = engine.conn.execute("SELECT revision FROM user_views").fetchone()[0]
    attach = open_view(engine, FIRST, "alpha", desktop_focus_available=False)
    assert attach.kind is DirectiveKind.ATTACH
    assert attach.view_id == focus.view_id
    assert attach.lease_expires_at == engine.now() + LEASE_MS
    # presentation capability is not semantic: no second navigation happened
    assert engine.conn.execute("SELECT revision FROM user_views").fetchone()[0] == revision
    assert engine.conn.execute("SELECT COUNT(*) FROM request_records").fetchone()[0] == 1
    again = open_view(engine, FIRST, "alpha", desktop_focus_available=False)
    assert again == attach
    assert [r[1] for r in _leases(engine)] == ["offered"]


def test_concurrent_different_request_is_blocked_until_expiry(engine: Engine) -> None:
    open_view(engine, FIRST, "alpha", desktop_focus_available=False)
    other = open_view(engine, SECOND, "alpha", desktop_focus_available=False)
    assert other.kind is DirectiveKind.BLOCKED
    assert other.error is not None and other.error.code == "desktop_launch_in_progress"
    assert other.desktop_token is None
    engine.clock.advance(LEASE_MS + 1)
    later = open_view(engine, SECOND, "alpha", desktop_focus_available=False)
    assert later.kind is DirectiveKind.ATTACH
    assert [r[1] for r in _leases(engine)] == ["expired", "offered"]


def test_unknown_project_is_blocked_with_a_reason(engine: Engine) -> None:
    directive = open_view(engine, FIRST, "nope", desktop_focus_available=True)
    assert directive.kind is DirectiveKind.BLOCKED
    assert "unknown project 'nope'" in directive.error.message
    assert directive.view_id is None


def test_directive_round_trips_as_canonical_json(engine: Engine) -> None:
    directive = open_view(engine, FIRST, "alpha", desktop_focus_available=False)
    encoded = encode_canonical(directive, allow_paths=frozenset({"$.desktopToken"}))
    assert decode_checked(encoded, schema=PresentationDirective) == directive


def test_claimed_lease_frees_the_view_for_the_next_open(engine: Engine) -> None:
    from core.engine.presentation import claim_lease

    first = open_view(engine, FIRST, "alpha", desktop_focus_available=False)
    assert claim_lease(engine, first.view_id, SECOND) is False  # only its own request
    assert claim_lease(engine, first.view_id, FIRST) is True
    nxt = open_view(engine, SECOND, "alpha", desktop_focus_available=False)
    assert nxt.kind is DirectiveKind.ATTACH
    assert [r[1] for r in _leases(engine)] == ["claimed", "offered"]
