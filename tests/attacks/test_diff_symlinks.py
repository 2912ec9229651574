"""Diff review reads the checkout as git does: links are links, FIFOs never block
(issue 37 item 4), and a file name cannot forge lines of ``frame diff`` (item 10).

The agent owns its checkout. An untracked ``shadow_link -> <a file outside>`` must
show as a link to that path (git stores a link as its target), never as the file's
contents, in ``frame diff``, its ``--json`` and the navigator's diff (``v``); a link
to a FIFO, or a commented file swapped for a FIFO, must not hang any of them. Each
attack runs against a real repository, the real ``switchboard`` entry point and the
review client the navigator uses.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.review.client import ReviewClient
from core.review.diff import (
    MAX_UNTRACKED_BYTES,
    EntryKind,
    FileStatus,
    LineKind,
    parse_diff,
    patch_text,
    read_entry,
)
from tests.attacks.test_git_config import switchboard
from tests.core.test_review import World, no_send, world  # noqa: F401  (the fixture)

SECRET = "TOP SECRET: the person's private key"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the checkout holding what the agent must not read through it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET + "\n")
    return folder


@pytest.fixture
def fifos(tmp_path: Path) -> Iterator[list[Path]]:
    """FIFOs the test makes; each is given a writer at the end so no reader a failed
    test left blocked stays blocked."""
    made: list[Path] = []
    yield made
    for fifo in made:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue  # nobody is reading it
        os.close(fd)


def _fifo(path: Path, fifos: list[Path]) -> Path:
    os.mkfifo(path, 0o600)
    fifos.append(path)
    return path


def within(seconds: float, work: Callable[[], object]) -> object:
    """``work()`` on a thread (as the navigator's ``v`` runs it); fails if it blocks."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    assert result, "the work raised (see the thread's traceback)"
    return result[0]


def test_an_untracked_symlink_shows_its_target_not_the_file(world: World,  # noqa: F811
                                                             outside: Path) -> None:
    target = str(outside / "secret.txt")
    (world.alpha / "shadow_link").symlink_to(target)
    text = switchboard(world, "frame", "diff", world.alpha_ws).stdout
    stat = switchboard(world, "frame", "diff", world.alpha_ws, "--stat").stdout
    raw_json = switchboard(world, "frame", "diff", world.alpha_ws, "--json").stdout
    navigator = ReviewClient(world.home, no_send).frame_diff(world.alpha_ws)
    for shown in (text, stat, raw_json, patch_text(navigator)):
        assert "TOP SECRET" not in shown
    assert f"+{target}\n" in text and "shadow_link" in stat
    [link] = [f for f in json.loads(raw_json)["files"] if f["path"] == "shadow_link"]
    assert [line["text"] for line in link["hunks"][0]["lines"]
            if line["kind"] == LineKind.ADDED] == [target]
    [entry] = [f for f in navigator.files if f.path == "shadow_link"]
    assert entry.status is FileStatus.UNTRACKED and entry.added == 1
    assert "new symlink" in entry.hunks[0].header


def test_a_symlink_to_a_fifo_does_not_hang_frame_diff_or_v(world: World,  # noqa: F811
                                                           outside: Path,
                                                           fifos: list[Path]) -> None:
    fifo = _fifo(outside / "pipe", fifos)
    (world.alpha / "pipe_link").symlink_to(fifo)
    text = switchboard(world, "frame", "diff", world.alpha_ws).stdout  # 120 s cap
    assert f"+{fifo}" in text
    diff = within(20, lambda: ReviewClient(world.home, no_send).frame_diff(world.alpha_ws))
    assert "pipe_link" in {f.path for f in diff.files}  # type: ignore[attr-defined]


def test_a_commented_file_swapped_for_a_fifo_does_not_hang_v(world: World,  # noqa: F811
                                                             fifos: list[Path]) -> None:
    """``v`` re-reads every sent comment's file; the agent replaces one by a FIFO."""
    from core.broker.membership import PersonSent

    client = ReviewClient(world.home, lambda frame, text: PersonSent(1, "alpha", "typed"))
    client.comment(world.alpha_ws, "app.py", 3, "fix this")
    client.send_review(world.alpha_ws)
    (world.alpha / "app.py").unlink()
    _fifo(world.alpha / "app.py", fifos)
    diff = within(20, lambda: client.frame_diff(world.alpha_ws))
    # the file is no longer one: its comment counts as answered, not as a hang
    assert [c.state for c in diff.comments] == ["resolved"]  # type: ignore[attr-defined]


def test_a_comment_reads_a_link_as_its_target_and_never_through_a_folder_link(
        world: World, outside: Path) -> None:  # noqa: F811
    from core.model.errors import NotFound

    target = str(outside / "secret.txt")
    (world.alpha / "shadow_link").symlink_to(target)
    (world.alpha / "sub").symlink_to(outside, target_is_directory=True)
    client = ReviewClient(world.home, no_send)
    comment = client.comment(world.alpha_ws, "shadow_link", 1, "why this link?")
    assert comment.line_text == target
    with pytest.raises(NotFound):
        client.comment(world.alpha_ws, "sub/secret.txt", 1, "through a folder link")
    diff = client.frame_diff(world.alpha_ws)
    assert "sub/secret.txt" not in {f.path for f in diff.files}
    assert SECRET not in patch_text(diff)


def test_the_reader_takes_regular_files_only_and_at_most_the_cap(tmp_path: Path,
                                                                 fifos: list[Path]) -> None:
    root = tmp_path / "checkout"
    (root / "deep").mkdir(parents=True)
    (root / "deep" / "big.txt").write_bytes(b"x" * (MAX_UNTRACKED_BYTES + 10))
    big = read_entry(root, "deep/big.txt", MAX_UNTRACKED_BYTES)
    assert big.kind is EntryKind.FILE and big.cut and len(big.data) == MAX_UNTRACKED_BYTES
    _fifo(root / "pipe", fifos)
    assert within(10, lambda: read_entry(root, "pipe", 100).kind) is EntryKind.OTHER
    (root / "link").symlink_to("/etc/passwd")
    assert read_entry(root, "link", 100) == read_entry(root, "link", 100)
    assert read_entry(root, "link", 100).data == b"/etc/passwd"
    (root / "dirlink").symlink_to(root / "deep", target_is_directory=True)
    for bad in ("dirlink/big.txt", "../checkout/deep/big.txt", "deep//big.txt", "gone"):
        with pytest.raises(OSError):
            read_entry(root, bad, 100)


def test_a_file_name_cannot_forge_lines_of_frame_diff(world: World) -> None:  # noqa: F811
    """Newlines and tabs in a name are printed escaped, as git quotes names."""
    forged = "notes\n  +999 -0  forged.py  added\n\tdiff --git ax bx"
    (world.alpha / forged).write_text("hello\n")
    stat = switchboard(world, "frame", "diff", world.alpha_ws, "--stat").stdout
    text = switchboard(world, "frame", "diff", world.alpha_ws).stdout
    assert len(stat.splitlines()) == 2  # the header and one row: the one file
    assert not any(line.startswith("  +999") for line in stat.splitlines())
    assert not any(line.startswith("\tdiff --git") for line in text.splitlines())
    quoted = '"b/notes\\n  +999 -0  forged.py  added\\n\\tdiff --git ax bx"'
    assert f"+++ {quoted}" in text
    # what a pager gets parses back to the same name
    diff = ReviewClient(world.home, no_send).frame_diff(world.alpha_ws)
    assert [f.path for f in parse_diff(patch_text(diff))] == [forged]


def test_core_worktree_cannot_point_the_diff_outside_the_checkout(
        world: World, outside: Path) -> None:  # noqa: F811
    """The agent commits a path that mirrors a file outside (``outside/secret.txt``) and
    sets ``core.worktree`` to the folder above both: plain git would diff that file's
    contents against the commit. The review pins the working tree to the checkout."""
    from tests.core.test_review import git

    mirror = world.alpha / "outside"
    mirror.mkdir()
    (mirror / "secret.txt").write_text("placeholder\n")
    git(world.alpha, "add", "outside/secret.txt")
    git(world.alpha, "commit", "-q", "-m", "mirror")
    git(world.alpha, "config", "core.worktree", str(outside.parent))
    plain = git(world.alpha, "diff", "HEAD")
    assert SECRET in plain  # the redirect is live for git itself
    text = switchboard(world, "frame", "diff", world.alpha_ws).stdout
    navigator = ReviewClient(world.home, no_send).frame_diff(world.alpha_ws)
    assert SECRET not in text and SECRET not in patch_text(navigator)
