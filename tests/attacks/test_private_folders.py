"""A second user who makes Switchboard's private folders first gets nothing (issue 37.1).

The agent tools are served by the home's one server over loopback HTTP (issue 38.2); the
launch's bearer token, which stands for the agent's capability, is kept in the home's
run folder (``<run>/server/tokens/<sha256>``, 0600 in 0700 folders) and in the launch's
0600 MCP config. Another user who makes one of those folders first, or finds it open,
could read or plant token records; the per-user temp folder (``$TMPDIR/switchboard-run-UID``)
is shared ground the same way. These tests leave each folder as the attack would:
the tests run as root, so the folder is made and given to uid 65534 (nobody), or made
open to everybody (0777), or is a symbolic link planted in place.

Each case is refused in one line naming the folder and what to do (``own_dir``). A
person's own project folder is still accepted by ``private_dir``.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.model.files import FolderNotPrivate, check_own_dir, own_dir, private_dir
from core.providers import agent_http
from core.runtime import launcher
from tests.core.test_cli import cli  # noqa: F401 - the fixture

OTHER_UID = 65534
"""nobody: the second user of these attacks."""
SECRET = "sk-attack-test-0123456789"


@pytest.fixture(autouse=True)
def _as_root() -> None:
    if os.getuid() != 0:
        pytest.fail("these tests act as a second user (uid 65534) and must run as root, as "
                    "the suite does in its container")


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A sticky, world-writable folder standing in for ``$TMPDIR`` (/tmp itself is never
    touched), made the process's temp folder for the test (after ``tmp_path`` exists,
    which pytest makes under the temp folder too)."""
    folder = Path(tempfile.mkdtemp(prefix="sb-shared-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_folder(shared: Path) -> Path:
    return shared / f"switchboard-run-{os.getuid()}"


# ---- the Python side: the folders are refused in one line -----------------------------


def plant(kind: str, folder: Path, tmp_path: Path) -> None:
    """Make ``folder`` the way an attack (or a careless earlier run) leaves it."""
    if kind == "other_owner":
        folder.mkdir(mode=0o755)
        os.chown(folder, OTHER_UID, OTHER_UID)
    elif kind == "open_mode":
        folder.mkdir()
        os.chmod(folder, 0o777)
    elif kind == "symlink":
        target = tmp_path / "elsewhere"
        target.mkdir(mode=0o700)
        os.chown(target, OTHER_UID, OTHER_UID)
        folder.symlink_to(target)
    else:
        raise AssertionError(kind)


WHAT = {"other_owner": f"belongs to uid {OTHER_UID}", "open_mode": "is open to other users",
        "symlink": "is a symbolic link"}


@pytest.mark.parametrize("kind", sorted(WHAT))
def test_the_servers_token_folder_planted_first_is_refused(kind: str, tmp_path: Path) -> None:
    """The home's ``server`` folder (lock, port file, log, token records) made first by
    the other user, open to all, or a symbolic link to theirs: a launch's token is never
    written there, nor read from there, and the server is not started in it."""
    run_dir = own_dir(tmp_path / "home" / "run")
    folder = run_dir / agent_http.SERVER_FOLDER
    plant(kind, folder, tmp_path)
    with pytest.raises(FolderNotPrivate) as refused:
        agent_http.register_token(run_dir, own_dir(run_dir / "session-a"), {"A": SECRET})
    message = refused.value.message
    assert str(folder) in message and WHAT[kind] in message
    assert "\n" not in message and "nothing was changed" in message
    assert refused.value.exit_code == 3
    for probe in (agent_http.tokens_dir, agent_http.server_dir, agent_http.running):
        with pytest.raises(FolderNotPrivate):
            probe(run_dir)  # nothing read from there either (a planted port or lock)
    if kind != "symlink":
        assert list(folder.iterdir()) == []  # nothing was put in the planted folder


@pytest.mark.parametrize("kind", sorted(WHAT))
def test_engine_tmp_planted_first_is_refused(kind: str, shared_tmp: Path,
                                             tmp_path: Path) -> None:
    folder = run_folder(shared_tmp)
    plant(kind, folder, tmp_path)
    with pytest.raises(FolderNotPrivate, match=WHAT[kind]):
        launcher.engine_tmp()


def test_a_run_folder_open_to_others_is_refused_for_the_tokens(tmp_path: Path) -> None:
    """The home's run folder itself open to others (group/world access): checked the
    same way before a token is stored in it."""
    run_dir = tmp_path / "h" / "run"
    run_dir.mkdir(parents=True)
    os.chmod(run_dir, 0o777)
    with pytest.raises(FolderNotPrivate, match=f"{run_dir} is open to other users"):
        agent_http.tokens_dir(run_dir)
    os.chmod(run_dir, 0o700)
    assert agent_http.tokens_dir(run_dir) == run_dir / "server" / "tokens"


def test_a_launch_into_a_planted_server_folder_is_refused_and_undone(
        cli, sb_home: Path, tmp_path: Path) -> None:  # noqa: F811
    """The attack through a real launch (`switchboard frame start` on the workspace):
    the home's server folder, where the launch's token would be stored, was made by the
    other user. The launch is refused in one line naming the folder, no agent runs, no
    token is written, and the start is undone: once the folder is put right, the same
    command starts the agent (its token 0600 in 0700 folders)."""
    route = cli("project", "enter", "alpha", "--json")
    before = cli("frame", "show", route["frame_id"], "--json")
    assert before["placement_state"] == "stopped_affinity"
    run_dir = sb_home / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    planted = run_dir / agent_http.SERVER_FOLDER
    plant("other_owner", planted, tmp_path)
    said = cli("frame", "start", route["frame_id"], expect=3)
    assert said.count("\n") == 1 and "folder_not_private" in said, said
    assert str(planted) in said and f"belongs to uid {OTHER_UID}" in said
    assert list(planted.iterdir()) == []
    assert cli("frame", "show", route["frame_id"], "--json") == before  # the start undone

    os.rmdir(planted)
    started = cli("frame", "start", route["frame_id"], "--json")
    assert started["frame_id"] == route["frame_id"]
    after = cli("frame", "show", route["frame_id"], "--json")
    assert after["placement_state"] == "active"
    assert after["current_session_key"] == started["session_key"]
    tokens = agent_http.tokens_dir(run_dir)
    for folder in (run_dir, planted, tokens):
        info = os.lstat(folder)
        assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700, folder
    records = list(tokens.iterdir())
    assert records and all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in records)
    mcp = list(run_dir.glob("*/claude-mcp.json"))
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in mcp)


def test_own_folder_is_made_private_and_reused(shared_tmp: Path) -> None:
    """No attack: the per-user temp folder is made 0700 and this user's, and used again."""
    folder = launcher.engine_tmp()
    assert folder == run_folder(shared_tmp)
    info = os.lstat(folder)
    assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
    assert launcher.engine_tmp() == folder


def test_a_persons_project_folder_is_still_accepted(tmp_path: Path) -> None:
    """``private_dir`` keeps existing folders as they are (a project shared with a team);
    only Switchboard's own folders go through ``own_dir``."""
    project = tmp_path / "project"
    project.mkdir()
    os.chmod(project, 0o775)
    os.chown(project, OTHER_UID, OTHER_UID)
    assert private_dir(project) == project
    assert stat.S_IMODE(project.stat().st_mode) == 0o775
    with pytest.raises(FolderNotPrivate):
        check_own_dir(project)
    created = own_dir(tmp_path / "made" / "here")
    assert stat.S_IMODE(created.stat().st_mode) == 0o700
