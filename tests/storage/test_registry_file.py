"""The registry file fails closed: unknown, foreign, newer, truncated or partial files are
refused with a specific message and stay byte-identical; normal open never creates
state; only init and a confirmed reset publish a generation.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import HostConfig, load_config, render_config
from core.config.home import Home
from core.config.registry import init_registry, open_current, reset_registry
from core.model.errors import RegistryUnavailable, SwitchboardError
from navigator.cli import main as cli_main
from storage.registry_file import diagnose, open_registry
from storage.schema import APPLICATION_ID, SCHEMA_VERSION
from tests.factories import HOST_ID, make_engine, project_config

OTHER_UUID = "44444444-4444-4444-8444-444444444444"


def stamp(path: Path) -> tuple[str, int, int]:
    """sha256, size and mtime: what "left unchanged" means for a file."""
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_size, stat.st_mtime_ns


SIDECARS = ("-wal", "-shm")


def tree(root: Path, *, sidecars: bool = False) -> dict[str, tuple[str, int, int]]:
    """Every file under ``root`` with its stamp; SQLite's -wal/-shm only when asked
    (they are checked on their own, see test_refused_file_gets_no_files_beside_it)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): stamp(p) for p in sorted(root.rglob("*"))
            if p.is_file() and (sidecars or not p.name.endswith(SIDECARS))}


def home_at(root: Path) -> Home:
    return Home(root=root, config_path=root / "config.toml")


@pytest.fixture(scope="module")
def template_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialized home whose registry holds a project route (real rows)."""
    root = tmp_path_factory.mktemp("template") / "home"
    engine = make_engine(root)
    engine.project_enter("50000000-0000-4000-8000-000000000001", "alpha")
    engine.conn.close()
    return root


@pytest.fixture
def home(template_home: Path, tmp_path: Path) -> Home:
    root = tmp_path / "home"
    shutil.copytree(template_home, root)
    return home_at(root)


def registry_of(home: Home) -> Path:
    generation = home.read_current_generation()
    assert generation is not None
    return home.registry_path(generation)


# --------------------------------------------------------------------------- bad files


def _foreign(good: Path, target: Path) -> None:
    conn = sqlite3.connect(target)
    conn.execute("PRAGMA application_id = 1234567")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('someone else''s data')")
    conn.commit()
    conn.close()


def _plain_sqlite(good: Path, target: Path) -> None:
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()


def _with_sql(*statements: str) -> Callable[[Path, Path], None]:
    def build(good: Path, target: Path) -> None:
        shutil.copyfile(good, target)
        conn = sqlite3.connect(target)
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.close()
    return build


def _truncated(good: Path, target: Path) -> None:
    data = good.read_bytes()
    target.write_bytes(data[: len(data) // 2])


def _empty(good: Path, target: Path) -> None:
    target.write_bytes(b"")


def _not_sqlite(good: Path, target: Path) -> None:
    target.write_bytes(b"# this is a text file, not a database\n" * 200)


BAD_FILES: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "foreign": (_foreign, "belongs to another application (application_id 1234567)"),
    "plain_sqlite": (_plain_sqlite, "belongs to another application (application_id 0)"),
    "newer_schema": (_with_sql(f"PRAGMA user_version = {SCHEMA_VERSION + 1}"),
                     f"has registry schema v{SCHEMA_VERSION + 1}, newer than this Switchboard "
                     f"(v{SCHEMA_VERSION})"),
    "unknown_schema": (_with_sql("PRAGMA user_version = 0"), "unknown registry schema v0"),
    "truncated": (_truncated, "is truncated"),
    "partial": (_with_sql("DROP TABLE host_state_cache", "DROP TABLE recoveries"),
                "partially initialized (missing tables: recoveries, host_state_cache)"),
    "no_metadata": (_with_sql("DELETE FROM registry_metadata"), "has no registry metadata"),
    "empty": (_empty, "is not a Switchboard registry (truncated or empty)"),
    "not_sqlite": (_not_sqlite, "is not a readable SQLite registry"),
}

# A read-only SQLite open of a WAL-mode file would leave -wal/-shm beside it;
# diagnose() must refuse without creating anything next to the file.
SIDECAR_CASES = sorted(BAD_FILES)


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_diagnose_refuses_and_leaves_the_file_unchanged(home: Home, tmp_path: Path,
                                                        kind: str) -> None:
    build, message = BAD_FILES[kind]
    target = tmp_path / "bad" / "registry.sqlite3"
    target.parent.mkdir()
    build(registry_of(home), target)
    before = stamp(target)
    with pytest.raises(RegistryUnavailable) as refused:
        diagnose(target)
    assert message in refused.value.message
    assert str(target) in refused.value.message
    assert stamp(target) == before


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_open_current_refuses_a_bad_published_file(home: Home, tmp_path: Path,
                                                   kind: str) -> None:
    build, message = BAD_FILES[kind]
    registry = registry_of(home)
    scratch = tmp_path / "scratch.sqlite3"
    build(registry, scratch)
    registry.unlink()
    shutil.move(scratch, registry)
    before = stamp(registry)
    config_before = stamp(home.config_path)
    with pytest.raises(RegistryUnavailable) as refused:
        open_current(home)
    assert message in refused.value.message
    assert stamp(registry) == before
    assert stamp(home.config_path) == config_before


@pytest.mark.parametrize("kind", SIDECAR_CASES)
def test_refused_file_gets_no_files_beside_it(home: Home, tmp_path: Path, kind: str) -> None:
    build, _message = BAD_FILES[kind]
    folder = tmp_path / "bad"
    folder.mkdir()
    target = folder / "registry.sqlite3"
    build(registry_of(home), target)
    before = tree(folder, sidecars=True)
    with pytest.raises(RegistryUnavailable):
        diagnose(target)
    assert tree(folder, sidecars=True) == before


def test_mismatched_registry_gets_no_files_beside_it(home: Home) -> None:
    """A good file of the wrong host is refused by open_current; nothing appears beside it."""
    config = load_config(home.config_path)
    other_host = HostConfig(host_id=OTHER_UUID, display_name="elsewhere")
    home.config_path.write_text(render_config(replace(config, host=other_host)),
                                encoding="utf-8")
    before = tree(home.root, sidecars=True)
    with pytest.raises(RegistryUnavailable):
        open_current(home)
    assert tree(home.root, sidecars=True) == before


def _registry_with_many_rows(home: Home) -> Path:
    """A registry whose last pages are request rows (no schema on them)."""
    registry = registry_of(home)
    conn = sqlite3.connect(registry)
    conn.executemany(
        "INSERT INTO request_records (host_id, request_id, operation, semantic_fingerprint,"
        " state, created_at) VALUES (?, ?, 'bench', ?, 'prepared', 1)",
        [(HOST_ID, f"req-{i:06d}", "f" * 64) for i in range(3000)])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return registry


@pytest.mark.parametrize("cut", [
    pytest.param(4096 * 3, id="three-pages"),
    pytest.param(4096, id="one-page"),
    pytest.param(100, id="100-bytes"),
    pytest.param(1, id="1-byte"),
])
def test_truncated_tail_is_refused(home: Home, tmp_path: Path, cut: int) -> None:
    data = _registry_with_many_rows(home).read_bytes()
    target = tmp_path / "cut.sqlite3"
    target.write_bytes(data[: len(data) - cut])
    before = stamp(target)
    with pytest.raises(RegistryUnavailable):
        diagnose(target)
    assert stamp(target) == before


def _short_lived_writers(path: str, stop, seconds: float) -> None:
    """Like CLI or hook processes: open, write one row that grows the file, close (the
    last connection checkpoints on close), again and again."""
    from storage.connection import connect, write_transaction

    deadline = time.monotonic() + seconds
    index = 0
    while not stop.is_set() and time.monotonic() < deadline:
        conn = connect(Path(path))
        with write_transaction(conn):
            conn.execute(
                "INSERT INTO recoveries (recovery_id, host_id, kind, subject_type, subject_id,"
                " actionability, state, bounded_explanation, created_at, updated_at)"
                " VALUES (?, ?, 'pane_vanished', 'view', ?, 'manual', 'open', ?, 1, 1)",
                (f"recovery-{index}", HOST_ID, f"subject-{index}", "x" * 1000))
        conn.close()
        index += 1


def test_a_live_registry_is_never_refused_while_others_write(home: Home) -> None:
    registry = registry_of(home)
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    writer = context.Process(target=_short_lived_writers, args=(str(registry), stop, 8.0))
    writer.start()
    refusals: list[str] = []
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and not refusals:
            try:
                diagnose(registry)
            except RegistryUnavailable as exc:
                refusals.append(exc.message)
    finally:
        stop.set()
        writer.join(timeout=30)
    assert writer.exitcode == 0
    grown = sqlite3.connect(registry).execute("SELECT COUNT(*) FROM recoveries").fetchone()[0]
    assert grown > 0, "the writer never wrote: the race was not exercised"
    assert refusals == []


def test_staged_activation_is_refused(home: Home) -> None:
    registry = registry_of(home)
    conn = sqlite3.connect(registry)
    conn.execute("UPDATE registry_metadata SET activation_state = 'cutover_staged'")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = stamp(registry)
    with pytest.raises(RegistryUnavailable, match="staged, not committed"):
        open_current(home)
    assert stamp(registry) == before


# --------------------------------------------------------------------------- normal open


def test_normal_open_of_a_good_registry_changes_nothing(home: Home) -> None:
    before = stamp(registry_of(home))
    opened = open_current(home)
    assert opened.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == 1
    opened.conn.close()
    assert stamp(registry_of(home)) == before


def test_open_on_an_empty_home_creates_nothing(tmp_path: Path) -> None:
    missing = home_at(tmp_path / "never-made")
    with pytest.raises(RegistryUnavailable, match="not initialized"):
        open_current(missing)
    assert not missing.root.exists()
    existing = home_at(tmp_path / "empty")
    existing.root.mkdir()
    with pytest.raises(RegistryUnavailable, match="run `switchboard init`"):
        open_current(existing)
    assert list(existing.root.iterdir()) == []
    # a config alone (no published pointer) is not enough either
    existing.config_path.write_text(render_config(project_config(tmp_path / "src")),
                                    encoding="utf-8")
    with pytest.raises(RegistryUnavailable, match="not initialized"):
        open_current(existing)
    assert [p.name for p in existing.root.iterdir()] == ["config.toml"]


def test_open_with_a_missing_registry_file_creates_nothing(home: Home) -> None:
    registry = registry_of(home)
    registry.unlink()
    before = tree(home.root, sidecars=True)
    # init refuses here (a generation is published): the way out is a reset
    with pytest.raises(RegistryUnavailable, match="is gone .* reset --confirm-generation"):
        open_current(home)
    assert tree(home.root, sidecars=True) == before
    assert not registry.exists()


def test_config_generation_mismatch_is_refused(home: Home) -> None:
    config = load_config(home.config_path)
    home.config_path.write_text(render_config(replace(config, generation_id=OTHER_UUID)),
                                encoding="utf-8")
    before = tree(home.root)
    with pytest.raises(RegistryUnavailable, match="config generation .* does not match"):
        open_current(home)
    assert tree(home.root) == before


def test_config_host_mismatch_is_refused(home: Home) -> None:
    config = load_config(home.config_path)
    other_host = HostConfig(host_id=OTHER_UUID, display_name="elsewhere")
    home.config_path.write_text(render_config(replace(config, host=other_host)),
                                encoding="utf-8")
    before = tree(home.root)
    with pytest.raises(RegistryUnavailable, match="does not match config host"):
        open_current(home)
    assert tree(home.root) == before


def test_expected_generation_mismatch_is_refused(home: Home) -> None:
    before = tree(home.root)
    with pytest.raises(RegistryUnavailable, match="expected generation"):
        open_current(home, expected_generation=OTHER_UUID)
    with pytest.raises(RegistryUnavailable, match="does not match the expected generation"):
        open_registry(registry_of(home), expected_generation=OTHER_UUID,
                      expected_host=HOST_ID)
    assert tree(home.root) == before


def test_registry_of_another_generation_is_refused(home: Home, tmp_path: Path) -> None:
    """A file put in place of the published one (same host) names its own generation."""
    other = home_at(tmp_path / "other")
    init_registry(other, template=project_config(tmp_path / "other-src"))
    registry = registry_of(home)
    shutil.copyfile(registry_of(other), registry)
    before = tree(home.root)
    with pytest.raises(RegistryUnavailable, match="does not match the expected generation"):
        open_current(home)
    assert tree(home.root) == before


def test_application_id_is_switchboard(home: Home) -> None:
    conn = sqlite3.connect(f"file:{registry_of(home)}?mode=ro", uri=True)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


# --------------------------------------------------------------------------- init / reset


def test_init_twice_is_refused_and_changes_nothing(home: Home) -> None:
    before = tree(home.root)
    with pytest.raises(SwitchboardError) as refused:
        init_registry(home)
    assert refused.value.code == "already_initialized"
    assert home.read_current_generation() in refused.value.message
    assert tree(home.root) == before


def test_reset_with_the_wrong_generation_changes_nothing(home: Home) -> None:
    before = tree(home.root)
    with pytest.raises(SwitchboardError) as refused:
        reset_registry(home, confirm_generation=OTHER_UUID)
    assert refused.value.code == "generation_mismatch"
    assert "nothing was changed" in refused.value.message
    assert tree(home.root) == before


def test_reset_before_init_is_refused(tmp_path: Path) -> None:
    empty = home_at(tmp_path / "fresh")
    with pytest.raises(SwitchboardError) as refused:
        reset_registry(empty, confirm_generation=OTHER_UUID)
    assert refused.value.code == "not_initialized"
    assert not empty.root.exists()


def test_confirmed_reset_publishes_a_new_generation_and_keeps_the_old_file(home: Home) -> None:
    old_generation = home.read_current_generation()
    assert old_generation is not None
    old_registry = registry_of(home)
    old_stamp = stamp(old_registry)
    result = reset_registry(home, confirm_generation=old_generation)
    assert result.generation_id != old_generation
    assert home.read_current_generation() == result.generation_id
    assert load_config(home.config_path).generation_id == result.generation_id
    assert load_config(home.config_path).host.host_id == HOST_ID  # same host, new generation
    assert stamp(old_registry) == old_stamp  # kept, byte-identical
    opened = open_current(home)
    assert opened.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == 0
    assert opened.conn.execute("SELECT generation_id FROM registry_metadata").fetchone()[0] \
        == result.generation_id
    opened.conn.close()
    with pytest.raises(RegistryUnavailable):
        open_current(home, expected_generation=old_generation)
    # the old generation's file is not openable as current any more
    with pytest.raises(SwitchboardError) as refused:
        reset_registry(home, confirm_generation=old_generation)
    assert refused.value.code == "generation_mismatch"


def test_cli_init_twice_and_wrong_reset_exit_with_errors(
        sb_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["init", "--json"]) == 0
    capsys.readouterr()
    before = tree(sb_home)
    assert cli_main(["init"]) == 2
    assert "already_initialized" in capsys.readouterr().err
    assert cli_main(["reset", "--confirm-generation", OTHER_UUID]) == 2
    assert "generation_mismatch" in capsys.readouterr().err
    assert tree(sb_home) == before
