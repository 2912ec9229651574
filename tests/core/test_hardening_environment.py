"""A full or read-only disk is one sentence, a distinct exit code and no half-write.

Honest conditions, not mocks: the home lives on a small tmpfs that the test
really fills up (or remounts read-only), and the hook runs as providers run
it, a separate ``switchboard hook`` process. Needs permission to mount a
tmpfs (root, as in the project's container); without it the tests fail and
say so.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.model.errors import EnvironmentFailure
from core.model.files import write_private
from tests.core.engines import dump as dump_registry
from tests.core.engines import rid
from tests.core.test_hook_handler import LiveSurface, dump, launch_live_surface, payload_for
from tests.factories import make_engine
from tests.waiting import retry_until

REPO = Path(__file__).resolve().parents[2]


def _mount(mount: Path, *options: str) -> None:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail("these tests need to mount a small tmpfs (run them as root, as the "
                    f"project container does): {done.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    _mount(mount, "size=24m")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> Path:
    """Write zeros until the file system refuses; returns the filler to delete later."""
    filler = folder / "filler"
    with open(filler, "ab", buffering=0) as handle:  # appends: a second call tops it up
        for size in (1 << 20, 1 << 16, 1 << 12, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == 28, exc
    return filler


@pytest.fixture
def live_on_small_disk(small_disk: Path, tmux_socket: Path,
                       monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveSurface]:
    root = small_disk / "home"
    root.mkdir()
    monkeypatch.setenv("SWITCHBOARD_HOME", str(root))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    surface = launch_live_surface(root, tmux_socket)
    yield surface
    surface.engine.conn.close()


def run_hook(live: LiveSurface, payload: bytes,
             prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(live.env(), SWITCHBOARD_CONFIG=str(live.root / "config.toml"))
    return subprocess.run(
        [*prefix, sys.executable, "-m", "navigator.cli", "hook", "--provider", "claude",
         "UserPromptSubmit"], cwd=REPO, env=env, input=payload.decode(),
        capture_output=True, text=True, timeout=120)


def empty_wal(conn, database: Path) -> bool:
    """Checkpoint and truncate the WAL; False while a reader (the agent's hook) blocks it.

    With frames left in a checkpointed WAL, SQLite reuses that space and a write
    would not need new disk blocks: not the full-disk case under test.
    """
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    wal = Path(f"{database}-wal")
    return busy == 0 and (not wal.exists() or wal.stat().st_size == 0)


def activity(live: LiveSurface) -> str:
    return live.engine.conn.execute(
        "SELECT activity FROM provider_sessions WHERE session_key = ?",
        (live.session_key,)).fetchone()[0]


def quiet_for(root: Path, seconds: float) -> bool:
    """No file under ``root`` appeared, went or changed size for ``seconds``."""
    def files() -> set[tuple[str, int]]:
        return {(str(p), p.stat().st_size) for p in root.rglob("*") if p.is_file()}

    try:
        first = files()
        time.sleep(seconds)
        return files() == first
    except FileNotFoundError:  # one went while it was listed
        return False


def full_disk_with_empty_wal(live: LiveSurface, registry: Path) -> Path:
    """Fill the disk while the registry's WAL is empty; a background write (the agent's
    own hooks) between the truncate and the fill would leave room, so check it after."""
    wal = Path(f"{registry}-wal")
    for _ in range(20):
        # The agent's own first hooks may still be creating its session file in the
        # background; one that fails on the full disk frees its pages for ours.
        assert retry_until(lambda: quiet_for(live.root, 2.0), 90), "files never settled"
        assert retry_until(lambda: empty_wal(live.engine.conn, registry), 30)
        filler = fill(live.root.parent)
        if not wal.exists() or wal.stat().st_size == 0:
            return filler
        filler.unlink()
    raise AssertionError("the registry's WAL never stayed empty while the disk filled")


def test_hook_on_a_full_disk_says_so_in_one_line_and_writes_nothing(
        live_on_small_disk: LiveSurface) -> None:
    live = live_on_small_disk
    # The navigator keeps the registry open (so -shm exists); an emptied WAL means
    # the hook's commit needs new disk blocks, as on a real full disk.
    registry = live.root / "state" / live.engine.generation_id / "registry.sqlite3"
    assert activity(live) != "working"
    before = dump(live)
    filler = full_disk_with_empty_wal(live, registry)
    fill(live.root.parent)  # space another process freed meanwhile (a rolled-back journal)
    done = run_hook(live, payload_for(live, "UserPromptSubmit", prompt="hello"))
    assert done.returncode == 3, done.stderr
    # Whichever of its files the hook writes first meets the full disk (the registry,
    # or under load the session's own file): one line naming it, nothing changed.
    said = re.fullmatch(r"switchboard: disk_full: disk full while writing (\S+): free space "
                        r"and retry; nothing was changed\n", done.stderr)
    assert said is not None, done.stderr
    assert Path(said[1]).is_relative_to(live.root), said[1]
    assert dump(live) == before
    filler.unlink()
    again = run_hook(live, payload_for(live, "UserPromptSubmit", prompt="hello"))
    assert again.returncode == 0, again.stderr
    assert activity(live) == "working"  # the same hook works once there is space


def test_hook_on_a_read_only_disk_says_so_in_one_line(live_on_small_disk: LiveSurface) -> None:
    live = live_on_small_disk
    before = dump(live)
    # The hook alone sees the home read-only: a mount namespace of its own where the
    # home is bound over itself and remounted read-only. The navigator, the agent and
    # any worker keep their files open on the real mount outside it, so the remount can
    # never be busy (a shared bind remount was: whatever opened a file through it).
    home = str(live.root)
    read_only = ("unshare", "--mount", "--propagation", "private", "sh", "-c",
                 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', home)
    done = run_hook(live, payload_for(live, "UserPromptSubmit", prompt="hello"), read_only)
    assert done.returncode == 3, done.stderr
    line, = done.stderr.splitlines()
    assert line.startswith("switchboard: read_only: "), line
    assert "registry.sqlite3" in line and "retry" in line and "Traceback" not in line
    assert dump(live) == before


def test_engine_request_on_a_full_disk_is_an_environment_failure(small_disk: Path) -> None:
    engine = make_engine(small_disk / "home")
    try:
        engine.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = dump_registry(engine.conn)
        filler = fill(small_disk)
        with pytest.raises(EnvironmentFailure) as failed:
            engine.project_enter(rid(1), "alpha")
        assert failed.value.code == "disk_full"
        assert failed.value.message.endswith(
            "registry.sqlite3: free space and retry; nothing was changed")
        filler.unlink()
        assert dump_registry(engine.conn) == before
        assert engine.project_enter(rid(1), "alpha").view_id
    finally:
        engine.conn.close()


def test_private_write_on_a_full_disk_keeps_the_old_file(small_disk: Path) -> None:
    target = small_disk / "run" / "settings.json"
    write_private(target, "old")
    filler = fill(small_disk)
    with pytest.raises(EnvironmentFailure) as failed:
        write_private(target, "x" * 100_000)
    assert failed.value.code == "disk_full"
    assert str(target) in failed.value.message
    assert target.read_text() == "old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["settings.json"]
    filler.unlink()


def test_a_registry_locked_past_the_timeout_is_named_in_words(tmp_path: Path) -> None:
    import sqlite3

    from core.model.errors import RegistryUnavailable

    engine = make_engine(tmp_path / "home")
    holder = sqlite3.connect(str(tmp_path / "home" / "state" / engine.generation_id
                                 / "registry.sqlite3"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process mid-write, for too long
        engine.conn.execute("PRAGMA busy_timeout = 200")  # the wait itself is not under test
        before = dump_registry(engine.conn)
        with pytest.raises(RegistryUnavailable) as refused:
            engine.project_enter(rid(1), "alpha")
        assert refused.value.code == "registry_busy"
        assert refused.value.message.endswith(
            "registry.sqlite3 stayed locked by another Switchboard process for 5 s: retry "
            "in a moment; nothing was changed")
        holder.execute("ROLLBACK")
        assert dump_registry(engine.conn) == before
    finally:
        holder.close()
        engine.conn.close()


def test_broker_on_a_read_only_disk_says_so(small_disk: Path) -> None:
    from core.broker.broker import open_broker

    path = small_disk / "broker.sqlite3"
    open_broker(path).close()
    before = path.read_bytes()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        with pytest.raises(EnvironmentFailure) as failed:
            open_broker(path)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert failed.value.code == "read_only"
    assert failed.value.message.startswith(f"{path} is read-only")
    assert path.read_bytes() == before
