"""No schema rule's name reaches a person: every refusal reads as words.

Walks the real registry schema (loaded into SQLite, read back from
``sqlite_master``): every trigger ``RAISE(ABORT, 'invariant:NAME')``, every
unique index and UNIQUE/PRIMARY KEY constraint, every named CHECK. For each, the
exact text SQLite raises is mapped as a write would map it, then shown the way a
person sees it (the CLI's stderr line, the navigator's notification): neither
may hold the raw name nor any snake_case identifier. A new invariant without a
sentence in ``storage.refusals`` fails here.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from core.engine.engine import Engine
from core.model.errors import SwitchboardError
from navigator.cli import _report
from navigator.jobs import request_problem
from storage.connection import map_integrity_error, write_transaction
from storage.refusals import REFUSAL_WORDS
from storage.schema import ddl
from tests.core.engines import fresh_engine, rid

_SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


def _schema() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(ddl())
    return conn


def _failures() -> list[tuple[str, str]]:
    """(rule name, the IntegrityError text SQLite raises when the rule refuses a write)."""
    conn = _schema()
    found: list[tuple[str, str]] = []
    for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'"):
        for kind, name in re.findall(r"RAISE\(ABORT, '(\w+):(\w+)'\)", sql):
            found.append((name, f"{kind}:{name}"))
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        for name in re.findall(r"CONSTRAINT (\w+) CHECK", sql):
            found.append((name, f"CHECK constraint failed: {name}"))
        named_unique = dict((tuple(c.strip() for c in cols.split(",")), name) for name, cols in
                            re.findall(r"CONSTRAINT (\w+) (?:UNIQUE|PRIMARY KEY) \(([^)]*)\)",
                                       sql))
        for _, index, unique, origin, _partial in conn.execute(f"PRAGMA index_list({table})"):
            if not unique:
                continue
            columns = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({index})"))
            name = index if origin == "c" else named_unique.get(columns)
            if name is None:
                continue  # an unnamed key (a plain id column): no rule name to leak
            text = "UNIQUE constraint failed: " + ", ".join(f"{table}.{c}" for c in columns)
            found.append((name, text))
    return found


FAILURES = _failures()


def test_the_walk_finds_the_schema_rules() -> None:
    names = {name for name, _ in FAILURES}
    assert {"one_nonterminal_transition_per_view", "brief_content_immutable",
            "workspace_is_root", "one_session_per_provider_id"} <= names
    assert len(names) >= 40


def _person_sees(error: SwitchboardError, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The CLI's stderr line without its generic ``switchboard: CODE:`` prefix (checked
    apart: never a rule's name), and the navigator's notification text."""
    _report(error)
    line = capsys.readouterr().err
    prefix = re.match(r"switchboard: (\w+): ", line)
    assert prefix is not None, line
    assert prefix.group(1) not in REFUSAL_WORDS, line
    return [line[prefix.end():], request_problem("Push", error)]


@pytest.mark.parametrize(("name", "text"), FAILURES, ids=[f"{n}:{t[:5]}" for n, t in FAILURES])
def test_every_schema_rule_reads_as_words(name: str, text: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    machine = text.startswith(("illegal_edge:", "illegal_initial_state:"))
    if not machine:  # a state machine's name is a word (transport, control turn)
        assert name in REFUSAL_WORDS, f"{name} has no sentence in storage/refusals.py"
    error = map_integrity_error(sqlite3.IntegrityError(text))
    for shown in _person_sees(error, capsys):
        if not machine:
            assert name not in shown, shown
        assert not _SNAKE.search(shown), shown
        assert "nothing was changed" in shown


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = fresh_engine(tmp_path / "home")
    yield engine
    engine.conn.close()


def test_real_refusals_read_as_words(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    """Writes the registry really refuses (a trigger, a unique index) reach the CLI in words."""
    route = engine.project_enter(rid(1), "alpha")
    push = engine.frame_push(rid(2), route.frame_id, "child", "brief")
    refusals = []
    for sql, args in [
        ("UPDATE transition_briefs SET brief = 'changed' WHERE transition_id = ?",
         (push.transition_id,)),
        ("INSERT INTO frames SELECT * FROM frames WHERE frame_id = ?", (route.frame_id,)),
    ]:
        with pytest.raises(SwitchboardError) as refused, write_transaction(engine.conn):
            engine.conn.execute(sql, args)
        refusals.append(refused.value)
    for error in refusals:
        for shown in _person_sees(error, capsys):
            assert shown.count("refused") == 1 and "nothing was changed" in shown, shown
            assert not _SNAKE.search(shown), shown
    assert refusals[0].code == "brief_content_immutable"
