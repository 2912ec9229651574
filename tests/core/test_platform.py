"""core/platform holds every OS-specific call, and each macOS branch runs here too (issue 38.4)."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

from core.platform import system_name
from core.platform.file_watch import ChangeWatch
from core.platform.lifetime import die_with_parent
from tests.waiting import retry_until

ROOT = Path(__file__).resolve().parents[2]

FORBIDDEN_NAMES = {"SO_PEERCRED", "LOCAL_PEERCRED", "prctl", "SOCK_CLOEXEC", "inotify_init1",
                   "inotify_add_watch", "memfd_create", "PR_SET_PDEATHSIG"}
FORBIDDEN_TEXT = ("/proc/", "SO_PEERCRED", "SOCK_CLOEXEC", "prctl", "memfd")


def _violations(path: Path) -> list[str]:
    """Names and string constants (docstrings aside) that belong in core/platform."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else \
            node.attr if isinstance(node, ast.Attribute) else None
        if name in FORBIDDEN_NAMES:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {text!r}"
                      for text in FORBIDDEN_TEXT if text in node.value]
    return found


def test_nothing_outside_core_platform_makes_an_os_specific_call() -> None:
    platform = ROOT / "core" / "platform"
    found = [v for package in ("core", "navigator", "storage")
             for path in sorted((ROOT / package).rglob("*.py"))
             if platform not in path.parents for v in _violations(path)]
    assert found == []


def test_the_boundary_check_finds_what_it_forbids(tmp_path: Path) -> None:
    """The check itself: a module naming /proc or SO_PEERCRED in code is caught, the
    same words in a docstring are not."""
    sample = ROOT / "core" / "_platform_sample_for_test.py"
    sample.write_text('"""Reads /proc/self and SO_PEERCRED, in words only."""\n'
                      'import socket\n'
                      'x = socket.SO_PEERCRED\n'
                      'y = open("/proc/self/status")\n')
    try:
        found = _violations(sample)
    finally:
        sample.unlink()
    assert [f.split(" ", 1)[1] for f in found] == ["SO_PEERCRED", "'/proc/'"]


def test_file_watch_is_inotify_on_linux_and_polling_on_macos(tmp_path: Path) -> None:
    target = tmp_path / "registry.sqlite3"
    target.write_text("")
    assert ChangeWatch.open([str(target)], system="darwin") is None
    if system_name() == "linux":
        watch = ChangeWatch.open([str(target)])
        assert watch is not None
        try:
            target.write_text("x")
            assert retry_until(watch.drain, 5)
        finally:
            watch.close()


def test_die_with_parent(tmp_path: Path) -> None:
    """Linux: a child whose parent is killed -9 gets SIGTERM; macOS: reported as not set."""
    assert die_with_parent(signal.SIGTERM, system="darwin") is False
    if system_name() != "linux":
        return
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "from core.platform.lifetime import die_with_parent\n"
        "child = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_parent)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n")], cwd=ROOT)
    try:
        assert retry_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 20)
        child = int(pid_file.read_text())
        parent.kill()
        parent.wait()

        def gone() -> bool:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                return True
            # a zombie waiting for init to reap it is gone too
            with open(f"/proc/{child}/stat") as stat:
                return stat.read().split(")")[-1].split()[0] == "Z"

        assert retry_until(gone, 10)
    finally:
        parent.kill()
