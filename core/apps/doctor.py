"""`switchboard doctor`: one verdict per part of the installation, and what to do.

Read-only: nothing is created or repaired here (a registry of an older schema is
upgraded in place, with its backup, as every command's first open does). Each
check catches its own failure so one broken part never hides the verdict on
the others.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.errors import SwitchboardError

if TYPE_CHECKING:
    from core.config.home import Home
    from core.engine.engine import Engine
    from core.model.enums import Provider
    from core.providers.version import ProviderVersion


class Verdict(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Finding:
    part: str
    verdict: Verdict
    detail: str
    fix: str = ""


def _registry(home: Home) -> tuple[list[Finding], Engine | None]:
    from core.engine.open import open_engine

    try:
        engine = open_engine(home)
    except SwitchboardError as exc:
        return [Finding("registry", Verdict.FAIL, exc.message,
                        "run `switchboard init` (a new home) or fix the file named above")], None
    except (sqlite3.Error, OSError) as exc:
        return [Finding("registry", Verdict.FAIL, f"cannot open the registry: {exc}",
                        "check the file permissions under the Switchboard home")], None
    projects = engine.conn.execute("SELECT COUNT(*) FROM projects").fetchone()[0]
    summary = f"generation {engine.generation_id}, {projects} project(s)"
    unwritable = _registry_unwritable(home, engine.generation_id)
    if unwritable is not None:
        detail, fix = unwritable
        return [Finding("registry", Verdict.FAIL, f"{summary}, but {detail}", fix)], engine
    return [Finding("registry", Verdict.OK, summary)], engine


def _registry_unwritable(home: Home, generation_id: str) -> tuple[str, str] | None:
    """Why the registry could be read but not written, with what to do; None when it can.

    An immutable file (``chattr +i``), a read-only file or folder or file system reads
    like a healthy registry: SQLite opens such a file read-only without a word, and only
    the first command that changes something fails. Asked with ``access(W_OK)``, which
    the kernel answers for the immutable flag and read-only mounts too (root included),
    so nothing is written. The folders count as well: SQLite makes its -wal/-shm files
    beside the registry, and a new generation's pointer is written in ``state/``.
    """
    path = home.registry_path(generation_id)
    parts = [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")),
             path.parent, home.state_dir]
    for part in parts:
        try:
            info = os.stat(part)
        except FileNotFoundError:
            continue  # no -wal yet: SQLite makes it in the folder, checked below
        folder = stat.S_ISDIR(info.st_mode)
        if os.access(part, os.W_OK | (os.X_OK if folder else 0)):
            continue
        what = "folder" if folder else "file"
        if os.statvfs(part).f_flag & os.ST_RDONLY:
            return (f"the registry {what} {part} is on a read-only file system, so every "
                    "command that changes anything fails",
                    "remount it writable (or point SWITCHBOARD_HOME at a writable home), "
                    "then run `switchboard doctor` again")
        if info.st_uid != os.getuid() or not info.st_mode & stat.S_IWUSR:
            return (f"the registry {what} {part} cannot be written (owner uid {info.st_uid}, "
                    f"mode {stat.S_IMODE(info.st_mode):04o}), so every command that changes "
                    "anything fails",
                    f"make it yours and writable (`chmod u+w{',x' if folder else ''} {part}`, "
                    "as its owner), then run `switchboard doctor` again")
        return (f"the registry {what} {part} cannot be written although its mode allows "
                "it: it is marked immutable (chattr +i) or a security policy forbids it, so "
                "every command that changes anything fails",
                f"see `lsattr -d {part}`; `sudo chattr -i {part}` lifts the immutable flag; "
                "then run `switchboard doctor` again")
    return None


def _broker(home: Home) -> Finding:
    from storage.broker_store import Verdict as FileVerdict
    from storage.broker_store import diagnose

    path = home.broker_path
    diagnosis = diagnose(path)
    if diagnosis.verdict is FileVerdict.MISSING:
        return Finding("broker", Verdict.OK, f"no broker file yet at {path}; the first agent "
                                             "launch creates it")
    if diagnosis.usable:
        from core.broker.broker import open_broker

        store = open_broker(path, create=False, readonly=True)
        try:
            fleets = store.conn.execute(
                "SELECT COUNT(*) FROM fleets WHERE deleted_at IS NULL").fetchone()[0]
            unread = store.conn.execute(
                "SELECT COUNT(*) FROM messages WHERE status_state <> 'completed'").fetchone()[0]
        finally:
            store.close()
        return Finding("broker", Verdict.OK, f"{path}: {fleets} live fleet(s), "
                                             f"{unread} unread message(s)")
    return Finding("broker", Verdict.FAIL, f"{path} {diagnosis.detail} (left unchanged)",
                   "move the file aside; the next agent launch creates a fresh broker")


def _session_files(home: Home, engine: Engine) -> Finding:
    from storage.session_db import SessionDbRefused, open_session_db_readonly, session_db_path

    keys = [r[0] for r in engine.conn.execute(
        "SELECT session_key FROM provider_sessions ORDER BY updated_at DESC LIMIT 200")]
    bad: list[str] = []
    present = 0
    for key in keys:
        path = session_db_path(home.root, key)
        if not path.exists():
            continue  # evidence is written from the first hook on; none yet is fine
        present += 1
        try:
            open_session_db_readonly(path).close()
        except (SessionDbRefused, sqlite3.Error) as exc:
            bad.append(f"{key}: {exc}")
    if bad:
        return Finding("session files", Verdict.FAIL,
                       f"{len(bad)} of {present} unreadable; first: {bad[0]}",
                       "move the named file aside; its session's evidence restarts empty")
    return Finding("session files", Verdict.OK,
                   f"{present} evidence file(s) readable for {len(keys)} session(s)")


def _tmux(engine: Engine) -> Finding:
    from core.runtime.stage import attach_stage
    from core.tmux.errors import TmuxUnavailable
    from core.tmux.identity import read_identity

    missing = _tmux_missing()
    if missing is not None:
        return missing
    stage = attach_stage(engine, engine.require_home())
    try:
        live = read_identity(stage.runner)
    except TmuxUnavailable:
        return Finding("tmux", Verdict.OK, f"no server on {stage.socket_path} yet; "
                                           "`switchboard open` starts it")
    recorded = engine.conn.execute(
        "SELECT COUNT(*) FROM user_views v JOIN tmux_servers t USING (tmux_server_id)"
        " WHERE v.state <> 'retired' AND NOT (t.socket_path = ? AND t.server_pid = ?"
        " AND t.server_start_time = ?)",
        (live.socket_path, live.server_pid, live.server_start_time)).fetchone()[0]
    if recorded:
        return Finding("tmux", Verdict.WARN,
                       f"server pid {live.server_pid} on {stage.socket_path} is not the one "
                       f"{recorded} view(s) were recorded on (it restarted)",
                       "enter each project again (`switchboard open PROJECT`) to rebuild "
                       "its view; Recoveries lists what to resume")
    return Finding("tmux", Verdict.OK, f"server pid {live.server_pid} on "
                                       f"{stage.socket_path} matches the recorded views")


# The package managers a person may have, most specific first: the hint names the one found.
_TMUX_INSTALLS = (("apt-get", "apt-get install tmux"), ("dnf", "dnf install tmux"),
                  ("yum", "yum install tmux"), ("pacman", "pacman -S tmux"),
                  ("zypper", "zypper install tmux"), ("apk", "apk add tmux"),
                  ("brew", "brew install tmux"), ("port", "port install tmux"))
_AS_THE_USER = frozenset({"brew"})
"""Managers that install as the person (Homebrew refuses root); the others need root."""
_SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin",
                "/opt/homebrew/bin", "/opt/local/bin")
"""Where package managers live when PATH leaves them out (a tool install's or a service's
minimal PATH, Homebrew not yet in a shell's profile)."""
_OS_MANAGERS = {"debian": "apt-get", "ubuntu": "apt-get", "fedora": "dnf", "rhel": "dnf",
                "centos": "dnf", "arch": "pacman", "opensuse": "zypper", "suse": "zypper",
                "alpine": "apk", "macos": "brew"}
"""The system's own manager by os-release ``ID``/``ID_LIKE`` when none is found on disk."""
_COMMON_INSTALLS = ("Debian/Ubuntu: `sudo apt-get install tmux`, Fedora: `sudo dnf install "
                    "tmux`, Arch: `sudo pacman -S tmux`, macOS: `brew install tmux`")


def _os_ids() -> list[str]:
    """This system's os-release ``ID`` and ``ID_LIKE`` words (``macos`` on a Mac)."""
    import platform
    import sys

    if sys.platform == "darwin":
        return ["macos"]
    try:
        release = platform.freedesktop_os_release()
    except OSError:
        return []
    return [release.get("ID", ""), *release.get("ID_LIKE", "").split()]


def tmux_install_command() -> str | None:
    """The exact command that installs tmux here: the first package manager on PATH, else
    in the usual system folders, else the one this system's os-release names; with
    ``sudo`` unless it runs as root (or the manager installs as the person)."""
    managers = dict(_TMUX_INSTALLS)
    found = next((tool for tool in managers if shutil.which(tool)), None) \
        or next((tool for tool in managers
                 if shutil.which(tool, path=os.pathsep.join(_SYSTEM_DIRS))), None) \
        or next((_OS_MANAGERS[i] for i in _os_ids() if i in _OS_MANAGERS), None)
    if found is None:
        return None
    root = getattr(os, "geteuid", lambda: -1)() == 0
    return managers[found] if root or found in _AS_THE_USER else f"sudo {managers[found]}"


def _tmux_missing() -> Finding | None:
    """tmux is the one program Switchboard needs besides Python, and a wheel cannot bring
    it: a missing binary says how this machine installs it."""
    if shutil.which("tmux") is not None:
        return None
    command = tmux_install_command()
    how = f"`{command}`" if command else f"this system's package manager ({_COMMON_INSTALLS})"
    return Finding("tmux", Verdict.FAIL, "tmux is not on PATH; Switchboard runs every view "
                                         "in tmux and needs nothing else besides Python",
                   f"install tmux 3.2 or newer with {how}, then run `switchboard doctor` again")


def _installed() -> Finding:
    """Which Switchboard answers, so a report names the version and the copy it ran."""
    import sys

    from core.install.about import package_version

    where = Path(__file__).resolve().parents[2]
    return Finding("switchboard", Verdict.OK, f"{package_version()} (Python "
                                              f"{sys.version.split()[0]}, {where})")


def _providers(engine: Engine) -> list[Finding]:
    from core.config.config import OFF_BY_DEFAULT
    from core.model.enums import Provider
    from core.model.errors import ProviderError
    from core.providers.checks import check_provider

    findings = []
    used = _providers_in_use(engine)
    for provider in Provider:
        try:
            version = check_provider(engine.config, provider)
        except ProviderError as exc:
            needed = provider in used
            if exc.code == "provider_disabled" and not needed and provider in OFF_BY_DEFAULT:
                findings.append(Finding(f"provider {provider.value}", Verdict.OK,
                                        f"off (enabled = true under [providers.{provider.value}] "
                                        "turns it on)"))
                continue
            verdict = Verdict.FAIL if needed and exc.code != "provider_disabled" \
                else Verdict.WARN
            message = exc.message if needed or exc.code == "provider_disabled" else (
                f"{exc.message}; no project runs {provider.value}, so only a task pushed "
                f"with provider {provider.value} would need it")
            findings.append(Finding(f"provider {provider.value}", verdict, message,
                                    _provider_fix(provider, exc.code, verdict)))
            continue
        findings.append(_provider_finding(engine, provider, version))
    return findings


def _providers_in_use(engine: Engine) -> set[Provider]:
    """The providers something here runs: each project's (its preferred one, else the
    first enabled, as a new frame picks) and any provider session's. A missing
    provider nothing runs is a warning, not a failure: a person who only uses
    Claude need not install Codex to get a clean doctor."""
    from core.model.enums import Provider

    default = engine.config.default_provider
    used = {project.preferred_provider or default for project in engine.config.projects}
    if not engine.config.projects:
        used.add(default)
    used.update(Provider(row[0]) for row in engine.conn.execute(
        "SELECT DISTINCT provider FROM provider_sessions"))
    return used


def _provider_finding(engine: Engine, provider: Provider, version: ProviderVersion) -> Finding:
    """The version against the tested window, and the installed CLI's own help against
    the options Switchboard passes and the newest tested release (the drift verdict)."""
    from core.providers.contract import check_contract, read_surface
    from core.providers.traits import LIMITS_UNREAD, NO_EVENT_FOR
    from core.providers.version import resolve_command

    part = f"provider {provider.value}"
    settings = engine.config.providers[provider]
    surface = read_surface(provider, resolve_command(provider, settings.command))
    if surface is None:
        return Finding(part, Verdict.WARN, f"{version.verdict}; its --help could not be read, "
                                           "so its options were not checked",
                       f"run `{provider.value} --help` to see why")
    contract = check_contract(provider, surface)
    detail = f"{version.verdict}; {contract.describe()}"
    unseen = NO_EVENT_FOR[provider]
    if unseen:
        detail += f"; it sends no event for {unseen}: the activity shows unknown there"
    if LIMITS_UNREAD[provider]:
        detail += f"; no usage limit is shown for it: {LIMITS_UNREAD[provider]}"
    if not contract.works:
        return Finding(part, Verdict.FAIL, detail,
                       f"install a tested {provider.value} (see `switchboard --version`)")
    if version.place.untested:
        return Finding(part, Verdict.WARN, detail,
                       "it runs; badges rely on hooks no test has seen from this release: "
                       "report problems, or install a tested one")
    return Finding(part, Verdict.OK, detail)


def _provider_fix(provider: Provider, code: str, verdict: Verdict) -> str:
    """The ``do:`` line that matches the failure: an old CLI is upgraded, not reinstalled."""
    if verdict is Verdict.WARN:
        return ""
    from core.providers.window import NPM_PACKAGES

    if code == "provider_version_unsupported":
        return f"upgrade {provider.value} (npm install -g {NPM_PACKAGES[provider]})"
    return f"install {provider.value} or fix [providers.{provider.value}] command in the config"


def _hooks(engine: Engine) -> Finding:
    from core.runtime.launcher import hook_command

    argv = hook_command(engine)
    program = argv[0] if argv else ""
    if not program or (shutil.which(program) is None and not Path(program).is_file()):
        return Finding("hooks", Verdict.FAIL, f"hook command {program or '(empty)'!r} is not "
                                              "runnable",
                       "fix [hooks] command in the config (default: switchboard hook)")
    return Finding("hooks", Verdict.OK,
                   f"each launch installs its hooks and agent tools (command: {argv[0]} "
                   f"{' '.join(argv[1:])})")


def run_doctor(home: Home) -> list[Finding]:
    """Every check, in order; later checks that need the registry are skipped without it."""
    registry, engine = _registry(home)
    findings = [_installed(), *registry]
    findings.append(_guarded("broker", lambda: _broker(home)))
    if engine is None:
        missing = _tmux_missing()  # a new install learns this before `switchboard init`
        return findings if missing is None else [*findings, missing]
    try:
        findings.append(_guarded("session files", lambda: _session_files(home, engine)))
        findings.append(_guarded("tmux", lambda: _tmux(engine)))
        findings.extend(_guarded_many("providers", lambda: _providers(engine)))
        findings.append(_guarded("hooks", lambda: _hooks(engine)))
        if engine.config.agent_tools.obsolete_shim:
            findings.append(Finding(
                "agent tools", Verdict.WARN, '[agent_tools] transport = "shim" is no longer '
                "used: every agent gets its tools over HTTP from `switchboard server`",
                "remove the [agent_tools] section from the config"))
    finally:
        engine.conn.close()
    return findings


def _guarded(part: str, check: Callable[[], Finding]) -> Finding:
    try:
        return check()
    except (SwitchboardError, sqlite3.Error, OSError) as exc:
        return Finding(part, Verdict.FAIL, str(getattr(exc, "message", exc)),
                       "see the message; nothing was changed")


def _guarded_many(part: str, check: Callable[[], list[Finding]]) -> list[Finding]:
    try:
        return check()
    except (SwitchboardError, sqlite3.Error, OSError) as exc:
        return [Finding(part, Verdict.FAIL, str(getattr(exc, "message", exc)), "")]
