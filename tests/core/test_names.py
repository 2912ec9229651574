"""Naming a frame, view or project: the one resolver every command uses (issue 40 item 1).

The pure rules (``core.config.naming``) first, then the same rules over a real
registry (``core.state.names.resolve_name``) and the config's projects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.config import Config
from core.config.naming import MIN_PREFIX, AmbiguousName, Named, resolve
from core.context.requests import new_request_id
from core.model.errors import NotFound
from core.state.names import NameKind, resolve_name
from tests.factories import make_engine

ADD = Named("3f2a9c1e-0000-4000-8000-000000000001", "Add tests", "alpha", "open task")
REVIEW = Named("3f2a0000-0000-4000-8000-000000000002", "Review parser", "alpha", "open task")
ADD_BETA = Named("a1b2c3d4-0000-4000-8000-000000000003", "Add tests", "beta", "closed task")
ROWS = (ADD, REVIEW, ADD_BETA)


def pick(text: str, rows: tuple[Named, ...] = ROWS) -> Named:
    return resolve(text, rows, what="frame", listing="switchboard frame list")


def test_exact_id() -> None:
    assert pick(ADD.id) is ADD


def test_id_prefix() -> None:
    assert pick("a1b2c3") is ADD_BETA
    assert pick("A1B2C3D4") is ADD_BETA  # ids are printed lower case; typed either way


def test_short_or_shared_prefix_is_not_a_guess() -> None:
    with pytest.raises(NotFound):
        pick("a1b2c3d4"[:MIN_PREFIX - 1])  # too short to be meant
    with pytest.raises(AmbiguousName) as refused:
        pick("3f2a")  # both alpha frames' ids start so
    assert "Add tests (3f2a9c1e" in refused.value.message
    assert "Review parser (3f2a0000" in refused.value.message


def test_title_unique_in_the_registry() -> None:
    assert pick("Review parser") is REVIEW
    assert pick("review PARSER") is REVIEW  # case only matters when it tells rows apart


def test_project_slash_title() -> None:
    assert pick("alpha/Add tests") is ADD
    assert pick("beta/Add tests") is ADD_BETA


def test_ambiguous_title_lists_every_candidate_in_one_line() -> None:
    with pytest.raises(AmbiguousName) as refused:
        pick("Add tests")
    message = refused.value.message
    assert "\n" not in message
    assert "alpha/Add tests (3f2a9c1e, open task)" in message
    assert "beta/Add tests (a1b2c3d4, closed task)" in message
    assert "PROJECT/TITLE" in message and "nothing was done" in message
    assert refused.value.code == "ambiguous_name"


def test_unknown_names_the_known_ones() -> None:
    with pytest.raises(NotFound) as refused:
        pick("Write docs")
    assert "unknown frame 'Write docs'" in refused.value.message
    assert "Add tests" in refused.value.message and "Review parser" in refused.value.message
    assert "switchboard frame list" in refused.value.message


def test_an_exact_title_beats_an_id_prefix() -> None:
    titled = Named("ffff0000-0000-4000-8000-000000000009", "3f2a", "alpha")
    assert pick("3f2a", (*ROWS, titled)) is titled


def test_a_retired_view_is_named_only_by_its_id() -> None:
    live = Named("aaaa1111-0000-4000-8000-000000000001", "alpha", note="active")
    retired = Named("bbbb2222-0000-4000-8000-000000000002", "", note="retired")
    views = (live, retired)
    assert resolve("alpha", views, what="view", listing="switchboard view list") is live
    assert resolve(retired.id, views, what="view", listing="switchboard view list") is retired


# ------------------------------------------------------------------ over a real registry


def test_resolve_name_over_a_real_registry(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "home")
    config: Config = engine.config
    alpha = config.project_id_for("alpha")
    beta = config.project_id_for("beta")
    assert config.project_id_for(alpha.upper()) == alpha  # an id prefix, any case
    with pytest.raises(AmbiguousName) as refused:
        config.project_id_for("3333")  # every test project's id starts so
    # each candidate is shown with as much of its id as tells it from the others
    assert f"alpha ({alpha[:-1]}" in refused.value.message
    route = engine.project_enter(new_request_id(), "alpha")
    beta_route = engine.project_enter(new_request_id(), "beta")
    child = engine.frame_push(new_request_id(), route.frame_id, "Add tests",
                              "brief").target_frame_id

    def frame(text: str) -> str:
        return resolve_name(engine.conn, config, NameKind.FRAME, text)

    assert frame("Add tests") == frame("alpha/Add tests") == frame(child.upper()) == child
    assert frame(child) == child
    assert frame("beta") == beta_route.frame_id  # the workspace's title is its project's
    assert resolve_name(engine.conn, config, NameKind.VIEW, "beta") == beta_route.view_id
    assert resolve_name(engine.conn, config, NameKind.PROJECT, "beta") == beta
    engine.frame_push(new_request_id(), beta_route.frame_id, "Add tests", "brief")
    with pytest.raises(AmbiguousName) as refused:
        frame("Add tests")
    assert "alpha/Add tests" in refused.value.message
    assert "beta/Add tests" in refused.value.message
    with pytest.raises(NotFound) as unknown:
        frame("Review parser")
    assert "Add tests" in unknown.value.message


def test_text_with_a_control_character_never_matches_a_name() -> None:
    """A row stored before names were checked may hold an escape sequence; typed back, the
    same text is refused like any other hostile argument, never resolved to that row."""
    legacy = Named("c0ffee00-0000-4000-8000-000000000004", "evil\x1b]52;c;ZXZpbA==\x07", "alpha")
    with pytest.raises(NotFound) as refused:
        pick(legacy.name, (*ROWS, legacy))
    assert "\x1b" not in refused.value.message and "\\x1b" in refused.value.message
    assert pick(legacy.id[:8], (*ROWS, legacy)) is legacy  # its id still names it
