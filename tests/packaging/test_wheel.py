"""The package a person installs: sdist and wheel built as `pipx install .` builds them,
the wheel installed alone in a fresh venv, and run from there.

Every other test imports the source tree (an editable install), so a module or
a data file the wheel drops would pass all of them; here nothing from the
checkout is importable. The build runs on a copy of the working tree (the
build writes its egg-info beside the sources, and other work shares this
tree), with build isolation, so ``[build-system] requires`` is what it gets.
The fresh venv installs the dependencies from the package index as a user's
install does.

What counts as a file the wheel must hold is every file under the three
packages (``core``, ``navigator``, ``storage``): modules, and data read at run
time through a path (``navigator/switchboard.tcss``, the stylesheet; hook
entry scripts are modules there, ``navigator/hook_entry.py``). A new data file
or subpackage that ``[tool.setuptools]`` does not pick up fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.waiting import retry_value

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "navigator", "storage")
# Not part of the package (tests, images, caches) or made by a build.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "*.egg-info",
                                     "build", "dist", "tests", "screenshots", ".*_cache",
                                     ".hypothesis", "*.sqlite3*")


@dataclass(frozen=True)
class Built:
    source: Path
    wheel: Path
    sdist: Path
    version: str


def package_files(source: Path) -> set[str]:
    """Every file the packages hold, as paths inside the wheel."""
    return {path.relative_to(source).as_posix() for package in PACKAGES
            for path in (source / package).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def missing_from_wheel(expected: set[str], wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return expected - set(archive.namelist())


def _build(source: Path, out: Path, *only: str) -> None:
    done = subprocess.run([sys.executable, "-m", "build", *only, "--outdir", str(out),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    work = tmp_path_factory.mktemp("packaging")
    source = work / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SOURCES)
    _build(source, work / "dist")  # the sdist, then the wheel built from the sdist
    version = tomllib.loads((source / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    (wheel,) = (work / "dist").glob("switchboard-*.whl")
    (sdist,) = (work / "dist").glob("switchboard-*.tar.gz")
    return Built(source, wheel, sdist, version)


def test_the_wheel_and_sdist_hold_every_module_and_data_file(built: Built) -> None:
    expected = package_files(built.source)
    data = {name for name in expected if not name.endswith(".py")}
    assert "navigator/switchboard.tcss" in data  # the pattern finds the data files
    assert missing_from_wheel(expected, built.wheel) == set()
    with zipfile.ZipFile(built.wheel) as archive:
        stylesheet = archive.read("navigator/switchboard.tcss")
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert stylesheet == (ROOT / "styles" / "switchboard.tcss").read_bytes()
    assert tops == {*PACKAGES, f"switchboard-{built.version}.dist-info"}  # no tests, no stray
    prefix = f"switchboard-{built.version}/"
    with tarfile.open(built.sdist) as archive:
        in_sdist = {name.removeprefix(prefix) for name in archive.getnames()}
    assert expected - in_sdist == set()


def test_a_data_file_left_out_of_the_package_is_caught(built: Built,
                                                       tmp_path: Path) -> None:
    """The check above is not vacuous: without its package-data line the stylesheet is
    dropped from a real wheel, and the comparison names it."""
    source = tmp_path / "src"
    shutil.copytree(built.source, source, symlinks=True, ignore=NOT_SOURCES)
    pyproject = source / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    assert 'navigator = ["*.tcss"]' in text
    pyproject.write_text(text.replace('navigator = ["*.tcss"]', ""), "utf-8")
    _build(source, tmp_path / "dist", "--wheel")
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert missing_from_wheel(package_files(source), wheel) == {"navigator/switchboard.tcss"}


TOOL_INSTALLS = {
    # README's one-command installs, each into folders of this test's own.
    "pipx": lambda tool, source, where: (
        [str(tool), "install", str(source)],
        {"PIPX_HOME": str(where / "home"), "PIPX_BIN_DIR": str(where / "bin")}),
    "uv": lambda tool, source, where: (
        [str(tool), "tool", "install", str(source)],
        {"UV_TOOL_DIR": str(where / "home"), "UV_TOOL_BIN_DIR": str(where / "bin"),
         "UV_CACHE_DIR": str(where / "cache"), "UV_PYTHON": sys.executable}),
}


@pytest.mark.parametrize("installer", sorted(TOOL_INSTALLS))
def test_one_command_installs_it_from_a_checkout(built: Built, tmp_path: Path,
                                                 installer: str) -> None:
    """`pipx install .` and `uv tool install .`, as README says, give a `switchboard`
    that runs from the tool's own environment."""
    tool = Path(sys.executable).parent / installer
    assert tool.exists(), f"{installer} is missing: `make setup` installs the dev extras"
    source = tmp_path / "checkout"
    shutil.copytree(built.source, source, symlinks=True, ignore=NOT_SOURCES)
    where = tmp_path / installer
    argv, places = TOOL_INSTALLS[installer](tool, source, where)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("SWITCHBOARD_")}
    env.update(places, SWITCHBOARD_HOME=str(tmp_path / "sbhome"))
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    env["PATH"] = os.pathsep.join([str(where / "bin"), "/usr/bin", "/bin"])
    version = subprocess.run(["switchboard", "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    assert version.stdout.startswith(f"switchboard {built.version} "), version.stderr
    doctor = subprocess.run(["switchboard", "doctor"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    first = doctor.stdout.splitlines()[0]
    assert first.startswith(f"ok    switchboard: {built.version} ") and \
        str(where / "home") in first, doctor.stdout + doctor.stderr


def test_the_installed_wheel_runs_version_demo_and_doctor(built: Built,
                                                          tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", str(built.wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    home = Path(os.path.realpath("/tmp")) / f"sbpkg-{os.getpid()}-{tmp_path.name[-8:]}"
    socket = home / "tmux.sock"
    # Nothing from the checkout: no PYTHONPATH, a cwd outside it, only the venv's bin
    # and the system's (tmux) on PATH.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "PYTHONPATH", "VIRTUAL_ENV")
           and not k.startswith("SWITCHBOARD_")}
    env.update(PATH=os.pathsep.join([str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
               SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))

    def switchboard(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "switchboard"), *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)

    try:
        where = subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import core, navigator, storage; print(navigator.__file__)"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr

        version = switchboard("--version")
        assert version.returncode == 0, version.stderr
        assert version.stdout.startswith(f"switchboard {built.version} (Python ")
        assert [line.split()[0] for line in version.stdout.splitlines()[1:]] == [
            "claude", "codex", "gemini", "opencode"]

        demo = switchboard("demo", "--home", str(home), "--no-attach")
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert f"tmux -S {socket} attach" in demo.stdout
        panes = subprocess.run(["tmux", "-S", str(socket), "list-panes", "-a", "-F",
                                "#{pane_id} #{@sb_role}"], capture_output=True, text=True,
                               timeout=30).stdout.splitlines()
        navigator = next(line.split()[0] for line in panes if line.endswith(" navigator"))

        def drawn() -> str:
            return subprocess.run(["tmux", "-S", str(socket), "capture-pane", "-p", "-t",
                                   navigator], capture_output=True, text=True,
                                  timeout=30).stdout

        # the navigator may first draw the tree as the demo was building it
        screen = retry_value(drawn, lambda text: "Write the parser" in text
                             and "Add tests" in text, 60)
        assert "Write the parser" in screen and "Add tests" in screen, screen

        doctor = switchboard("doctor")
        lines = doctor.stdout.splitlines()
        assert lines[0].startswith(f"ok    switchboard: {built.version} (Python "), lines
        assert str(venv) in lines[0]
        assert any(line.startswith("ok    registry: generation ") for line in lines), lines
        assert any(line.startswith("ok    tmux: server pid ") for line in lines), lines

        completion = switchboard("completion", "bash")
        assert completion.returncode == 0 and "complete -F _switchboard switchboard" in \
            completion.stdout, completion.stderr
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
