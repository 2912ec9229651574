"""Oversized text is refused before SQL, in words; a CHECK that still fires reads as words.

Runs the real engine on a real registry file: a 100 KB brief used to reach
SQLite and come back as ``length(brief) BETWEEN 1 AND 65536: refused by check``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.engine.engine import Engine
from core.model.errors import InvariantViolation
from storage.connection import write_transaction
from storage.limits import TEXT_LIMITS, TextTooLong, describe_check
from storage.schema import ddl
from tests.core.engines import dump, fresh_engine, rid


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = fresh_engine(tmp_path / "home")
    yield engine
    engine.conn.close()


def test_limits_are_the_schema_numbers() -> None:
    text = ddl()
    for field, limit in TEXT_LIMITS.items():
        found = re.findall(rf"length\({field}\) (?:BETWEEN (\d+) AND (\d+)|<= (\d+))", text)
        assert found, field
        for low, high, at_most in found:
            assert (int(low or 0), int(high or at_most)) == (limit.low, limit.high), field


def test_a_100kb_brief_is_refused_with_its_size_and_nothing_changes(engine: Engine) -> None:
    route = engine.project_enter(rid(1), "alpha")
    before = dump(engine.conn)
    with pytest.raises(TextTooLong) as refused:
        engine.frame_push(rid(2), route.frame_id, "child", "x" * 102400)
    assert refused.value.message == ("brief is 102400 characters; the limit is 65536: "
                                     "shorten it (nothing was changed)")
    assert "length(" not in refused.value.message and "check" not in refused.value.message
    assert dump(engine.conn) == before
    ok = engine.frame_push(rid(3), route.frame_id, "child", "x" * 65536)  # the limit itself
    assert ok.state


@pytest.mark.parametrize(("field", "args"), [
    ("title", ("t" * 201, "brief")),
    ("purpose", ("title", "brief", "p" * 501)),
])
def test_title_and_purpose_limits_are_sentences(engine: Engine, field: str,
                                                args: tuple[str, ...]) -> None:
    route = engine.project_enter(rid(1), "alpha")
    title, brief, *purpose = args
    with pytest.raises(TextTooLong, match=rf"^{field} is \d+ characters; the limit is \d+"):
        engine.frame_push(rid(2), route.frame_id, title, brief,
                          purpose=purpose[0] if purpose else None)


def test_a_long_handoff_is_refused_before_sql(engine: Engine) -> None:
    route = engine.project_enter(rid(1), "alpha")
    push = engine.frame_push(rid(2), route.frame_id, "child", "brief")
    before = dump(engine.conn)
    with pytest.raises(TextTooLong, match="^next action is 70000 characters; the limit is 65536"):
        engine.frame_complete(rid(3), push.target_frame_id, "done", "n" * 70000)
    assert dump(engine.conn) == before


def test_a_check_that_still_fires_reads_as_words(engine: Engine) -> None:
    route = engine.project_enter(rid(1), "alpha")
    for sql, words in [
        ("UPDATE frames SET title = ''", "refused: title must be 1 to 200 characters long"),
        ("UPDATE frames SET depth = -1", "refused: the value breaks the rule depth >= 0"),
        ("UPDATE frames SET close_reason = 'completed'",
         "refused: a close reason is set only when a frame closes"),
        ("UPDATE user_views SET mode = 'sideways', revision = revision + 1",
         "refused: mode must be one of: navigator, direct"),
    ]:
        with pytest.raises(InvariantViolation) as refused, write_transaction(engine.conn):
            engine.conn.execute(sql + " WHERE frame_id = ?" if "frames" in sql
                                else sql + " WHERE view_id = ?",
                                (route.frame_id if "frames" in sql else route.view_id,))
        assert refused.value.message == words + "; nothing was changed", sql
        assert "CHECK constraint" not in refused.value.message


@pytest.mark.parametrize(("rule", "words"), [
    ("length(brief) BETWEEN 1 AND 65536", "brief must be 1 to 65536 characters long"),
    ("name IS NULL OR length(name) <= 200", "name must be at most 200 characters long"),
    ("length(capability_digest) = 64", "capability digest must be exactly 64 characters long"),
    ("state IN ('a', 'b')", "state must be one of: a, b"),
])
def test_describe_check_shapes(rule: str, words: str) -> None:
    assert describe_check(rule) == words
