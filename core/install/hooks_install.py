"""Install Switchboard's provider hooks into files we own or can restore exactly.

Nothing here edits a user's global settings. Switchboard's own launches carry
their hooks per launch (each adapter's ``plan``); ``switchboard hooks install``
writes them for sessions started outside Switchboard, into the files the
provider's adapter names and renders (a Claude settings file; a Codex config
directory laid out like ``~/.codex``: the project's ``.codex/`` or a CODEX_HOME
of its own). This module is what every install shares: the manifest, backups and
the three operations.

Every install keeps a manifest and the original bytes (and mode) of each file
it touches under ``<state_dir>/<key>/`` *before* writing, so uninstall restores
byte-identical content, removes files and directories it created, and a crash
mid-install is visible as ``modified_by_user`` rather than silently lost.
Install is idempotent; a target the person edited after install is refused
(install) or restored only with ``force`` (uninstall).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from core.model.enums import Provider
from core.model.errors import Conflict, ProviderError
from core.model.files import own_dir, private_dir
from core.providers.adapters import get_adapter
from core.providers.base import HookPlace
from core.providers.hook_files import check_hook_command, read_bytes, write_atomic

MANIFEST_FORMAT = 1


class HookStatus(StrEnum):
    INSTALLED = "installed"
    NOT_INSTALLED = "not_installed"
    MODIFIED = "modified_by_user"


@dataclass(frozen=True)
class HookTarget:
    """Where hooks go: a Claude settings file, or a Codex config directory."""

    provider: Provider
    location: Path

    @classmethod
    def claude_settings(cls, path: Path) -> HookTarget:
        return cls.chosen(Provider.CLAUDE, HookPlace(settings=path))

    @classmethod
    def codex_project(cls, project_root: Path) -> HookTarget:
        return cls.chosen(Provider.CODEX, HookPlace(project=project_root))

    @classmethod
    def codex_home(cls, directory: Path) -> HookTarget:
        return cls.chosen(Provider.CODEX, HookPlace(codex_home=directory))

    @classmethod
    def chosen(cls, provider: Provider, place: HookPlace) -> HookTarget:
        """The target the person's ``hooks install`` options name for ``provider``."""
        return cls(provider, _absolute(get_adapter(provider).hook_location(place)))

    @property
    def files(self) -> tuple[Path, ...]:
        return get_adapter(self.provider).hook_files(self.location)

    @property
    def install_hint(self) -> str | None:
        return get_adapter(self.provider).install_hint(self.location)

    @property
    def key(self) -> str:
        digest = hashlib.sha256(f"{self.provider.value}\0{self.location}".encode()).hexdigest()
        return f"{self.provider.value}-{digest[:24]}"


@dataclass(frozen=True)
class HookInstallation:
    """The outcome of install/status/uninstall, printable as JSON."""

    provider: Provider
    location: str
    status: HookStatus
    files: tuple[str, ...]
    changed: bool = False
    hook_command: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path))))


def default_hook_command() -> tuple[str, ...]:
    """``switchboard hook`` by absolute path, so hooks work whatever PATH the provider has."""
    beside_python = Path(sys.executable).parent / "switchboard"
    if os.access(beside_python, os.X_OK):
        return (str(beside_python), "hook")
    found = shutil.which("switchboard")
    if found:
        return (os.path.abspath(found), "hook")
    return (sys.executable, "-m", "navigator.cli", "hook")


def launch_hook_command() -> tuple[str, ...]:
    """The hook argv of Switchboard's own launches: this interpreter with ``-S`` running
    ``navigator/hook_entry.py`` (why: see that file; it is about two thirds of a bare
    Python start-up, paid by every prompt and turn end of every managed agent)."""
    from core.model.spawn import fast_cli_argv

    return (*fast_cli_argv(), "hook")


# --- rendering (pure) ------------------------------------------------------


def render(target: HookTarget, hook_command: Sequence[str], originals: Sequence[bytes | None]
           ) -> tuple[bytes, ...]:
    """The full new content of every file of ``target``, given its original bytes."""
    return get_adapter(target.provider).render_hook_files(hook_command, originals)


# --- manifest and files ----------------------------------------------------


def _sha256(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()


def _state_folder(state_dir: Path, target: HookTarget) -> Path:
    return Path(state_dir) / target.key


@contextlib.contextmanager
def _locked(state_dir: Path, target: HookTarget) -> Iterator[Path]:
    own_dir(state_dir)  # Switchboard's own folder, never the person's
    lock_path = Path(state_dir) / f"{target.key}.lock"
    with open(lock_path, "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield _state_folder(state_dir, target)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _load_manifest(folder: Path) -> dict | None:
    try:
        raw = (folder / "manifest.json").read_bytes()
    except FileNotFoundError:
        return None
    try:
        manifest = json.loads(raw)
    except ValueError:
        raise ProviderError(
            f"hook install manifest {folder / 'manifest.json'} is unreadable",
            code="hooks_manifest_invalid",
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ProviderError(
            f"hook install manifest {folder / 'manifest.json'} has an unknown format",
            code="hooks_manifest_invalid",
        )
    return manifest


def _save_manifest(folder: Path, manifest: dict) -> None:
    private_dir(folder)
    body = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
    write_atomic(folder / "manifest.json", body, 0o600)


def _original(folder: Path, entry: dict) -> bytes | None:
    if not entry["existed"]:
        return None
    return _backup(folder, entry)


def _backup(folder: Path, entry: dict) -> bytes:
    """The pre-install bytes of a file that existed before the install."""
    return (folder / entry["backup"]).read_bytes()


def _modified(manifest: dict) -> tuple[str, ...]:
    return tuple(
        entry["path"]
        for entry in manifest["files"]
        if _sha256(read_bytes(Path(entry["path"]))) != entry["written_sha256"]
    )


def _result(target: HookTarget, status: HookStatus, *, changed: bool = False,
            manifest: dict | None = None, modified: tuple[str, ...] = ()) -> HookInstallation:
    return HookInstallation(
        provider=target.provider,
        location=str(target.location),
        status=status,
        files=tuple(str(path) for path in target.files),
        changed=changed,
        hook_command=tuple(manifest["hook_command"]) if manifest else (),
        modified_files=modified,
    )


def _status_locked(target: HookTarget, folder: Path) -> tuple[HookInstallation, dict | None]:
    manifest = _load_manifest(folder)
    if manifest is None:
        return _result(target, HookStatus.NOT_INSTALLED), None
    modified = _modified(manifest)
    state = HookStatus.MODIFIED if modified else HookStatus.INSTALLED
    return _result(target, state, manifest=manifest, modified=modified), manifest


# --- the three operations --------------------------------------------------


def status(target: HookTarget, *, state_dir: Path) -> HookInstallation:
    """installed (our bytes are there), not_installed, or modified_by_user."""
    with _locked(state_dir, target) as folder:
        return _status_locked(target, folder)[0]


def install(
    target: HookTarget, hook_command: Sequence[str], *, state_dir: Path
) -> HookInstallation:
    """Write our hooks; a repeat with the same command changes nothing."""
    command = check_hook_command(hook_command)
    with _locked(state_dir, target) as folder:
        current, manifest = _status_locked(target, folder)
        if current.status is HookStatus.MODIFIED:
            raise Conflict(
                "hook files changed since Switchboard installed them: "
                + ", ".join(current.modified_files)
                + "; run `switchboard hooks uninstall --force` to restore the originals first",
                code="hooks_modified",
            )
        if manifest is not None:
            originals = [_original(folder, entry) for entry in manifest["files"]]
            contents = render(target, command, originals)
            if all(
                _sha256(content) == entry["written_sha256"]
                for content, entry in zip(contents, manifest["files"], strict=True)
            ):
                return current
            for content, entry in zip(contents, manifest["files"], strict=True):
                entry["written_sha256"] = _sha256(content)
            manifest["hook_command"] = list(command)
            _save_manifest(folder, manifest)
            for content, entry in zip(contents, manifest["files"], strict=True):
                write_atomic(Path(entry["path"]), content, entry["mode"])
            return _result(target, HookStatus.INSTALLED, changed=True, manifest=manifest)

        for path in target.files:
            if path.is_symlink():
                raise ProviderError(
                    f"{path} is a symlink; point Switchboard at the real file",
                    code="hooks_invalid",
                )
        originals = [read_bytes(path) for path in target.files]
        contents = render(target, command, originals)  # validates before any write
        created_dirs = _missing_dirs(get_adapter(target.provider).hook_dir(target.location))
        entries = []
        folder.mkdir(parents=True, exist_ok=True)
        for index, (path, original, content) in enumerate(
            zip(target.files, originals, contents, strict=True)
        ):
            entry = {
                "path": str(path),
                "existed": original is not None,
                "mode": (path.stat().st_mode & 0o7777) if original is not None else None,
                "backup": None,
                "original_sha256": _sha256(original),
                "written_sha256": _sha256(content),
            }
            if original is not None:
                entry["backup"] = f"{index}.orig"
                write_atomic(folder / entry["backup"], original, 0o600)
            entries.append(entry)
        manifest = {
            "format": MANIFEST_FORMAT,
            "provider": target.provider.value,
            "location": str(target.location),
            "hook_command": list(command),
            "files": entries,
            "created_dirs": [str(path) for path in created_dirs],
        }
        _save_manifest(folder, manifest)  # the way back exists before we write
        for path in created_dirs:
            path.mkdir(exist_ok=True)
        for entry, content in zip(entries, contents, strict=True):
            write_atomic(Path(entry["path"]), content, entry["mode"])
        return _result(target, HookStatus.INSTALLED, changed=True, manifest=manifest)


def uninstall(target: HookTarget, *, state_dir: Path, force: bool = False) -> HookInstallation:
    """Put back exactly what was there before install (bytes and mode)."""
    with _locked(state_dir, target) as folder:
        current, manifest = _status_locked(target, folder)
        if manifest is None:
            return current
        if current.status is HookStatus.MODIFIED and not force:
            raise Conflict(
                "hook files changed since Switchboard installed them: "
                + ", ".join(current.modified_files)
                + "; uninstall would discard those edits. Re-run with --force to restore "
                "the pre-install files anyway",
                code="hooks_modified",
            )
        for entry in manifest["files"]:
            path = Path(entry["path"])
            if entry["existed"]:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, _backup(folder, entry), entry["mode"])
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        for directory in reversed(manifest.get("created_dirs", [])):
            with contextlib.suppress(FileNotFoundError, OSError):
                Path(directory).rmdir()  # only if empty: never remove what others put there
        shutil.rmtree(folder, ignore_errors=True)
        return _result(target, HookStatus.NOT_INSTALLED, changed=True, manifest=manifest,
                       modified=current.modified_files)


def _missing_dirs(directory: Path) -> list[Path]:
    """Directories that do not exist yet, outermost first (so uninstall can remove them)."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    if current.exists() and not current.is_dir():
        raise ProviderError(f"{current} exists and is not a directory", code="hooks_invalid")
    return list(reversed(missing))
