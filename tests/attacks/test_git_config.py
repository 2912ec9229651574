"""A checkout's own git config must not run code through Switchboard (issue 37 item 2).

The agent writes its checkout, ``.git/config`` and ``.git/hooks`` included. Here a real
repository is armed as such an agent would arm it: an fsmonitor, clean/smudge filters
(one in an included config file, one whose name holds ``=``, one long-running
``process``), an external diff, a per-path diff driver with a command and a textconv,
hooks git runs on its own (post-checkout, reference-transaction, post-index-change,
pre-auto-gc), a pager and a difftool of the repository's choosing. Each program
touches a marker file. A plain ``git diff`` proves the trap is live (markers appear);
then every path by which Switchboard runs git in a checkout (``frame diff`` and its
``--stat``/``--json``, the detached change worker, ``conflicts --refresh``, the diff
screen's ``o``, ``worktree add``, the evidence reads, ``project add``) runs against it
and no marker may appear.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.model.git import difftool_call, person_difftool
from tests.core.test_review import World, git, world  # noqa: F401  (the fixture)

BIN = Path(sys.executable).parent  # the `switchboard` entry point of this install
ROOT = Path(__file__).resolve().parents[2]
HOOKS = ("post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc",
         "pre-commit", "post-merge")


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture
def markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder every planted program writes into; the person's global git config is an
    empty file of the test's own (a real ~/.gitconfig must not decide the outcome)."""
    folder = tmp_path / "markers"
    folder.mkdir()
    person = tmp_path / "person.gitconfig"
    person.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(person))
    return folder


def arm(repo: Path, markers: Path) -> Path:
    """Plant every program git would run in ``repo`` (config, attributes, hooks); returns
    the planted script. Committed first, then armed, so the setup itself runs nothing."""
    (repo / "notes.txt").write_text("notes\n")
    (repo / "data.cfg").write_text("k = 1\n")
    (repo / "plain.rst").write_text("no attributes\n")
    (repo / ".gitattributes").write_text(
        "*.py filter=evil diff=evil\n*.md filter=inc diff=evil\n"
        "*.txt filter=a=b diff=evil\n*.cfg filter=proc diff=evil\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "attributes")
    evil = _script(markers.parent / "evil.sh",
                   f'touch "{markers}/$1"\n[ "$1" = proc ] && exit 0\n'
                   '[ "$1" = external ] && exit 0\n[ "$1" = command ] && exit 0\ncat\n')
    for key, value in (
            ("core.fsmonitor", f"{evil} fsmonitor"),
            ("filter.evil.clean", f"{evil} clean"),
            ("filter.evil.smudge", f"{evil} smudge"),
            ("filter.evil.required", "true"),
            ("filter.a=b.clean", f"{evil} eq-clean"),
            ("filter.proc.process", f"{evil} proc"),
            ("diff.external", f"{evil} external"),
            ("diff.evil.command", f"{evil} command"),
            ("diff.evil.textconv", f"{evil} textconv"),
            ("core.pager", f"{evil} core-pager"),
            ("pager.difftool", f"{evil} difftool-pager"),
            ("diff.tool", "repotool"),
            ("difftool.repotool.cmd", f"{evil} repotool"),
            ("difftool.mytool.cmd", f"{evil} mytool-redefined"),
            ("difftool.vimdiff.cmd", f"{evil} vimdiff-redefined"),
            ("difftool.vimdiff.path", f"{evil}"),
            ("include.path", "../included.gitconfig")):
        git(repo, "config", key, value)
    (repo / "included.gitconfig").write_text(f'[filter "inc"]\n\tclean = {evil} inc-clean\n')
    hooks = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    (hooks / "hooks").mkdir(exist_ok=True)
    for name in HOOKS:
        _script(hooks / "hooks" / name, f'touch "{markers}/hook-{name}"\n')
    return evil


def dirty(repo: Path) -> None:
    """Change every filtered file (with an old mtime, so git must read the contents)."""
    for name in ("app.py", "README.md", "notes.txt", "data.cfg", "plain.rst"):
        with (repo / name).open("a") as out:
            out.write("one more line\n")
        os.utime(repo / name, (946684800, 946684800))
    (repo / "fresh.py").write_text("print('new')\n")


def planted(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


@pytest.fixture
def armed(world: World, markers: Path) -> World:  # noqa: F811
    arm(world.alpha, markers)
    dirty(world.alpha)
    dirty(world.beta)
    # the trap is live: git itself, run plainly, runs the planted programs
    for name in ("app.py", "README.md", "notes.txt", "data.cfg", "plain.rst"):
        subprocess.run(["git", "-C", str(world.alpha), "diff", "HEAD~1", "--", name],
                       capture_output=True, check=False, timeout=60)
    live = planted(markers)
    assert {"fsmonitor", "clean", "inc-clean", "eq-clean", "proc", "external",
            "command"} <= set(live), live
    for marker in markers.iterdir():
        marker.unlink()
    return world


def switchboard(frames: World, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SWITCHBOARD_") and k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(frames.home.root),
               SWITCHBOARD_CONFIG=str(frames.home.config_path))
    done = subprocess.run([str(BIN / "switchboard"), *args], env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def test_frame_diff_runs_nothing_the_checkout_names(armed: World, markers: Path) -> None:
    full = switchboard(armed, "frame", "diff", armed.alpha_ws).stdout
    stat = switchboard(armed, "frame", "diff", armed.alpha_ws, "--stat").stdout
    as_json = json.loads(switchboard(armed, "frame", "diff", armed.alpha_ws, "--json").stdout)
    assert planted(markers) == []
    # ... and the diff is still the real one, read without the filters
    assert "+one more line" in full and "fresh.py" in stat
    assert {f["path"] for f in as_json["files"]} >= {"app.py", "README.md", "notes.txt",
                                                     "data.cfg", "fresh.py"}


def test_the_change_worker_runs_nothing_the_checkout_names(armed: World, markers: Path) -> None:
    from storage.review_store import changes, open_review_readonly

    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(SWITCHBOARD_HOME=str(armed.home.root),
               SWITCHBOARD_CONFIG=str(armed.home.config_path))
    done = subprocess.run([sys.executable, "-m", "core.review.worker", armed.alpha_ws],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert planted(markers) == []
    reader = open_review_readonly(armed.home.root)
    assert reader is not None
    try:
        rows = {row.frame_id: row for row in changes(reader)}
    finally:
        reader.close()
    assert "app.py" in rows[armed.alpha_ws].files and "fresh.py" in rows[armed.alpha_ws].files


def test_conflicts_refresh_runs_nothing_the_checkout_names(armed: World,
                                                           markers: Path) -> None:
    switchboard(armed, "conflicts", "--refresh")
    assert planted(markers) == []


def test_the_difftool_is_the_persons_own(armed: World, markers: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``o``: the repository names a tool and redefines the person's; only the person's
    global definition runs, and a built-in tool is the built-in, not the repo's path."""
    base = git(armed.alpha, "rev-parse", "HEAD~1").strip()
    # what `o` ran before: the repository's diff.tool, as the repository defines it
    subprocess.run(["git", "-C", str(armed.alpha), "difftool", "--no-prompt", base, "--"],
                   capture_output=True, check=False, timeout=30, stdin=subprocess.DEVNULL)
    assert "repotool" in planted(markers)
    for marker in markers.iterdir():
        marker.unlink()
    assert person_difftool() is None  # the repository's diff.tool is not the person's
    ran = tmp_path / "ran"
    ran.mkdir()
    person = Path(os.environ["GIT_CONFIG_GLOBAL"])
    person.write_text(f'[diff]\n\ttool = mytool\n[difftool "mytool"]\n'
                      f'\tcmd = touch "{ran}/mytool-$(basename "$REMOTE")"\n')
    assert person_difftool() == "mytool"
    call = difftool_call(str(armed.alpha), base, "mytool")
    done = subprocess.run(list(call.argv), env=call.env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert planted(markers) == []
    assert {"mytool-app.py", "mytool-fresh.py"} & set(os.listdir(ran)) == {"mytool-app.py"}
    # a built-in tool (vimdiff) the repository redefined (cmd and path): the built-in runs
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    _script(fake_bin / "vim", f'touch "{ran}/builtin-vimdiff"\n')  # vimdiff is vim -d
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    person.write_text("[diff]\n\ttool = vimdiff\n")
    call = difftool_call(str(armed.alpha), base, person_difftool() or "")
    done = subprocess.run(list(call.argv), env=call.env, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert planted(markers) == []
    assert (ran / "builtin-vimdiff").exists()


def test_worktree_add_runs_no_hook_or_filter(armed: World, markers: Path) -> None:
    from core.install.worktree import add_worktree

    made, _project = add_worktree(armed.home, "alpha", "extra")
    assert planted(markers) == []
    assert (Path(made.path) / "app.py").read_text().startswith("app.py line 1")


def test_evidence_and_project_reads_run_nothing(armed: World, markers: Path) -> None:
    from core.evidence.store import changes_since
    from core.evidence.tasks import workspace_facts
    from core.install.project_add import find_checkout

    base = git(armed.alpha, "rev-parse", "HEAD~1").strip()
    stat = changes_since(str(armed.alpha), base)
    facts = workspace_facts(str(armed.alpha))
    checkout = find_checkout(armed.alpha)
    assert planted(markers) == []
    assert stat is not None and "app.py" in stat
    assert facts is not None and facts.branch_name == "main"
    assert checkout.is_git and checkout.root == armed.alpha.resolve()


def test_git_from_the_environment_is_not_taken(armed: World, markers: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Variables that carry config or programs (set by whoever started the process) do
    not reach Switchboard's git: the change worker inherits the hook's environment."""
    from core.review.diff import read_diff

    evil = markers.parent / "evil.sh"
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", f"{evil} env-external")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{evil} env-fsmonitor'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "filter.evil.clean")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"{evil} env-clean")
    base = git(armed.alpha, "rev-parse", "HEAD~1").strip()
    files, _cut = read_diff(str(armed.alpha), base)
    assert planted(markers) == []
    assert "app.py" in {f.path for f in files}


def test_every_git_call_goes_through_the_safe_builder() -> None:
    """No module starts ``git`` itself: a new call site would skip every setting above.
    An argv list that starts with the literal "git" and is handed to a process starter
    is found by ``ast`` in the three packages; only ``core.model.git`` may hold one."""
    import ast

    starters = {"run", "Popen", "call", "check_call", "check_output", "posix_spawnp",
                "execvp", "spawn_detached"}
    found = []
    for package in ("core", "navigator", "storage"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "core" / "model" / "git.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else ""
                first = node.args[0]
                if name in starters and isinstance(first, ast.List) and first.elts and \
                        isinstance(first.elts[0], ast.Constant) and first.elts[0].value == "git":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "git started outside core.model.git:\n" + "\n".join(found)


async def test_o_on_the_diff_screen_runs_the_persons_tool_only(
        armed: World, markers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key itself: ``o`` on the navigator's diff screen of the armed checkout. The
    headless test driver cannot hand the terminal over, so ``suspend`` is a no-op here;
    everything else (the screen, the git call, the tool) is real."""
    from contextlib import nullcontext

    from textual.app import App

    from core.review.diff import FrameDiff, read_diff
    from navigator.screens.diff import DiffScreen

    base = git(armed.alpha, "rev-parse", "HEAD~1").strip()
    files, _cut = read_diff(str(armed.alpha), base)
    diff = FrameDiff("frame", "Armed", str(armed.alpha), base, tuple(files))
    ran = tmp_path / "ran"
    ran.mkdir()
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(
        f'[diff]\n\ttool = mytool\n[difftool "mytool"]\n\tcmd = touch "{ran}/person-tool"\n')
    monkeypatch.setattr(App, "suspend", lambda self: nullcontext())

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(DiffScreen(diff))

    async with Host().run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("o")
        await pilot.pause()
    assert (ran / "person-tool").exists()
    assert planted(markers) == []


def test_a_config_that_cannot_be_read_stops_the_call(armed: World, markers: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: when the filter names cannot be read in time (a loaded machine, an
    include that blocks), the git call they guard is not made with the filters live."""
    from core.model import git as safe_git
    from core.review.diff import read_diff

    monkeypatch.setattr(safe_git, "CONFIG_READ_TIMEOUT_S", 0.000_001)
    with pytest.raises(safe_git.ConfigUnreadable):
        safe_git.run_git(armed.alpha, "diff", "HEAD~1", timeout=30)
    base = git(armed.alpha, "rev-parse", "HEAD~1").strip()
    files, _cut = read_diff(str(armed.alpha), base)
    assert planted(markers) == []
    assert files == []  # git was not asked: an empty diff, not a diff with filters run
