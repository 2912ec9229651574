"""Install Switchboard's provider hooks into files we own or can restore exactly.

Nothing here edits a user's global settings. Claude gets a settings file passed
per launch with ``claude --settings FILE``. Codex launches get their hooks as
``-c`` overrides trusted for that process only (``codex_session_hooks``: no
file at all, the person's own Codex home stays untouched); ``switchboard hooks
install`` can still write a config directory laid out like ``~/.codex``
(``hooks.json`` + ``config.toml`` with ``notify``) for Codex sessions started
outside Switchboard: the project's ``.codex/`` or a CODEX_HOME of its own.

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
import shlex
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from core.model.enums import Provider
from core.model.errors import Conflict, ProviderError
from core.model.files import private_dir
from core.providers.codex import SessionHooks, toml_string
from core.providers.hooks import CLAUDE_HOOK_EVENTS, CODEX_HOOK_EVENTS, CODEX_NOTIFY_EVENT

MANIFEST_FORMAT = 1
HOOK_TIMEOUT_S = 30
CODEX_HOOKS_FILE = "hooks.json"
CODEX_CONFIG_FILE = "config.toml"
CODEX_NOTIFY_BANNER = (
    "# Added by `switchboard hooks install`; `switchboard hooks uninstall` restores this file.\n"
)


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
        return cls(Provider.CLAUDE, _absolute(path))

    @classmethod
    def codex_project(cls, project_root: Path) -> HookTarget:
        return cls(Provider.CODEX, _absolute(project_root) / ".codex")

    @classmethod
    def codex_home(cls, directory: Path) -> HookTarget:
        return cls(Provider.CODEX, _absolute(directory))

    @property
    def files(self) -> tuple[Path, ...]:
        if self.provider is Provider.CLAUDE:
            return (self.location,)
        return (self.location / CODEX_HOOKS_FILE, self.location / CODEX_CONFIG_FILE)

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


def hook_argv(hook_command: Sequence[str], provider: Provider, event: str) -> list[str]:
    """``<hook command> --provider P EVENT``: the one shape every installed hook uses."""
    return [*hook_command, "--provider", Provider(provider).value, event]


def _check_command(hook_command: Sequence[str]) -> tuple[str, ...]:
    command = tuple(hook_command)
    if not command or not all(isinstance(part, str) and part for part in command):
        raise ProviderError("the hook command must be a non-empty argv", code="hooks_invalid")
    if any("\x00" in part or "\n" in part for part in command):
        raise ProviderError("the hook command contains a NUL or newline", code="hooks_invalid")
    return command


# --- rendering (pure) ------------------------------------------------------


def _hook_groups(hook_command: Sequence[str], provider: Provider, events: Sequence[str]) -> dict:
    return {
        event: [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": shlex.join(hook_argv(hook_command, provider, event)),
                        "timeout": HOOK_TIMEOUT_S,
                    }
                ]
            }
        ]
        for event in events
    }


def _merge_hooks(existing: bytes | None, groups: dict, what: str) -> bytes:
    """Add our matcher groups after whatever hooks the file already has."""
    if existing is None or not existing.strip():
        document: dict = {}
    else:
        try:
            document = json.loads(existing.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProviderError(
                f"{what} is not valid JSON ({exc}); fix it or choose another file",
                code="hooks_existing_invalid",
            ) from None
        if not isinstance(document, dict):
            raise ProviderError(f"{what} is not a JSON object", code="hooks_existing_invalid")
    hooks = document.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ProviderError(f"{what}: 'hooks' is not an object", code="hooks_existing_invalid")
    for event, ours in groups.items():
        current = hooks.setdefault(event, [])
        if not isinstance(current, list):
            raise ProviderError(
                f"{what}: hooks.{event} is not a list", code="hooks_existing_invalid"
            )
        current.extend(ours)
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def render_claude_settings(hook_command: Sequence[str], existing: bytes | None = None) -> bytes:
    """A Claude settings document with our hooks for every event we observe."""
    groups = _hook_groups(_check_command(hook_command), Provider.CLAUDE, CLAUDE_HOOK_EVENTS)
    return _merge_hooks(existing, groups, "the Claude settings file")


CLAUDE_MCP_SERVER = "switchboard"
"""The server name in the per-launch ``--mcp-config``; Claude names its tools
``mcp__<server>__<tool>``."""
MCP_WAIT_LIMIT_S = 30
"""How long a prompt waits for the agent tools: Claude's own MCP connect timeout."""
MCP_SETTLE_S = 2
"""After the server has listed its tools, the first prompt of a launch waits this much
longer: Claude adds a server's tools to its request a moment after the reply, and a
prompt let through at once still went out without them (seen with both a new and a
resumed session under load). Later prompts of the launch pass at once (``.passed``)."""
MCP_UNSEEN_S = 20
"""Seconds (wall clock) without our server as a child before the wait gives up: a loaded
machine can take seconds to spawn it (1 s, then 5 s counted in 0.1 s ticks that each
also ran pgrep, let prompts through without the tools under load)."""
MCP_SERVER_PATTERN = "navigator[.]cli mcp"
"""``pgrep -f`` pattern of the agent-tool server (``launcher.MCP_SERVER_ARGV``)."""


def claude_tool_names() -> tuple[str, ...]:
    """The exact names Claude Code gives Switchboard's own tools."""
    from core.agent.tool_schemas import TOOLS

    return tuple(f"mcp__{CLAUDE_MCP_SERVER}__{tool['name']}" for tool in TOOLS)


def mcp_wait_command(ready_file: Path, limit_s: int = MCP_WAIT_LIMIT_S) -> str:
    """A UserPromptSubmit hook that holds a prompt until the agent tools are listed.

    Claude Code connects MCP servers in the background and submits a prompt
    (even the one on argv) without waiting, so the model may not see
    ``transition_claim`` yet. The tools it sends are read after the
    UserPromptSubmit hooks finish, so this hook waits until the server wrote
    ``ready_file`` (after answering ``tools/list``), but only while that server
    is a child of this Claude (``$PPID``) and at most ``limit_s``. A server not
    seen for ``MCP_UNSEEN_S`` (not spawned yet, or briefly invisible to
    ``pgrep -f`` while it execs) ends the wait; a CLI that never starts it pays
    that once per launch (``<ready_file>.none`` remembers it). Once listed, the first
    prompt waits ``MCP_SETTLE_S`` more (``.passed`` then lets later ones through at
    once). Both limits are
    wall-clock seconds (``date +%s``), so a slow ``pgrep`` on a loaded machine
    does not stretch them. Plain POSIX sh, silent (hook output would become
    prompt context), always exit 0.
    """
    alive = (f"pgrep -P \"$PPID\" -f {shlex.quote(MCP_SERVER_PATTERN)} >/dev/null 2>&1")
    return (f"f={shlex.quote(str(ready_file))}; "
            "[ -e \"$f.passed\" ] || [ -e \"$f.none\" ] && exit 0; "
            "t=$(date +%s); seen=$t; s=0; "
            "while [ ! -e \"$f\" ]; do now=$(date +%s); "
            f"[ $((now - t)) -ge {int(limit_s)} ] && exit 0; "
            f"if {alive}; then s=1; seen=$now; fi; "
            f"if [ $((now - seen)) -ge {MCP_UNSEEN_S} ]; then "
            "[ \"$s\" = 1 ] || : > \"$f.none\"; exit 0; fi; "
            f"sleep 0.1; done; sleep {MCP_SETTLE_S}; : > \"$f.passed\"; exit 0")


def render_claude_launch_settings(hook_command: Sequence[str],
                                  mcp_ready_file: Path | None = None) -> bytes:
    """The ``--settings`` document of one launch: our hooks, the wait for the agent
    tools, and permission for exactly Switchboard's own three tools.

    Flag settings add to the person's own (user, project, local) settings: every
    other tool keeps the person's permission rules, and nothing global changes.
    """
    document = json.loads(render_claude_settings(hook_command))
    if mcp_ready_file is not None:
        document["hooks"]["UserPromptSubmit"].insert(0, {"hooks": [{
            "type": "command", "command": mcp_wait_command(mcp_ready_file),
            "timeout": MCP_WAIT_LIMIT_S + 15}]})
    document["permissions"] = {"allow": list(claude_tool_names())}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_claude_launch_settings(path: Path, hook_command: Sequence[str],
                                 mcp_ready_file: Path | None = None) -> Path:
    """Write (atomically, owner-only) the per-launch settings file Switchboard owns."""
    content = render_claude_launch_settings(hook_command, mcp_ready_file)
    if _read(path) != content:
        _write_atomic(path, content, 0o600)
    return path


def render_codex_hooks(hook_command: Sequence[str], existing: bytes | None = None) -> bytes:
    groups = _hook_groups(_check_command(hook_command), Provider.CODEX, CODEX_HOOK_EVENTS)
    return _merge_hooks(existing, groups, f"the Codex {CODEX_HOOKS_FILE}")


def codex_session_hooks(hook_command: Sequence[str]) -> SessionHooks:
    """Our Codex hooks for one launch: the same command lines as an installed
    ``hooks.json``, given as trusted ``-c`` overrides. No ``notify``: the Stop hook
    already ends a turn, and a ``-c notify`` would replace the person's own."""
    command = _check_command(hook_command)
    return SessionHooks(
        commands=tuple((event, shlex.join(hook_argv(command, Provider.CODEX, event)))
                       for event in CODEX_HOOK_EVENTS),
        timeout_s=HOOK_TIMEOUT_S)


def render_codex_config(hook_command: Sequence[str], existing: bytes | None = None) -> bytes:
    """Prepend a top-level ``notify = [...]`` (Codex appends the JSON as the last argv)."""
    argv = hook_argv(_check_command(hook_command), Provider.CODEX, CODEX_NOTIFY_EVENT)
    original = existing or b""
    try:
        current = tomllib.loads(original.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProviderError(
            f"the Codex {CODEX_CONFIG_FILE} is not valid TOML ({exc}); fix it first",
            code="hooks_existing_invalid",
        ) from None
    if "notify" in current:
        raise ProviderError(
            f"the Codex {CODEX_CONFIG_FILE} already sets notify = {current['notify']!r}; "
            "Switchboard will not replace it. Remove it, or use a CODEX_HOME of its own",
            code="hooks_conflict",
        )
    line = "notify = [" + ", ".join(toml_string(part) for part in argv) + "]\n"
    rendered = (CODEX_NOTIFY_BANNER + line + ("\n" if original else "")).encode() + original
    try:
        reread = tomllib.loads(rendered.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:  # e.g. a BOM in the original
        raise ProviderError(
            f"cannot add notify to the Codex {CODEX_CONFIG_FILE} safely: {exc}",
            code="hooks_existing_invalid",
        ) from None
    if reread.get("notify") != argv:
        raise ProviderError("notify did not round-trip through TOML", code="hooks_invalid")
    return rendered


def render(target: HookTarget, hook_command: Sequence[str], originals: Sequence[bytes | None]
           ) -> tuple[bytes, ...]:
    """The full new content of every file of ``target``, given its original bytes."""
    if target.provider is Provider.CLAUDE:
        return (render_claude_settings(hook_command, originals[0]),)
    return (
        render_codex_hooks(hook_command, originals[0]),
        render_codex_config(hook_command, originals[1]),
    )


# --- manifest and files ----------------------------------------------------


def _sha256(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ProviderError(f"{path} is a directory, not a file", code="hooks_invalid") from None


def _write_atomic(path: Path, content: bytes, mode: int | None) -> None:
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".sb-tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _state_folder(state_dir: Path, target: HookTarget) -> Path:
    return Path(state_dir) / target.key


@contextlib.contextmanager
def _locked(state_dir: Path, target: HookTarget) -> Iterator[Path]:
    private_dir(state_dir)  # Switchboard's own folder, never the person's
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
    _write_atomic(folder / "manifest.json", body, 0o600)


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
        if _sha256(_read(Path(entry["path"]))) != entry["written_sha256"]
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
    command = _check_command(hook_command)
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
                _write_atomic(Path(entry["path"]), content, entry["mode"])
            return _result(target, HookStatus.INSTALLED, changed=True, manifest=manifest)

        for path in target.files:
            if path.is_symlink():
                raise ProviderError(
                    f"{path} is a symlink; point Switchboard at the real file",
                    code="hooks_invalid",
                )
        originals = [_read(path) for path in target.files]
        contents = render(target, command, originals)  # validates before any write
        created_dirs = _missing_dirs(target.location if target.provider is Provider.CODEX
                                     else target.location.parent)
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
                _write_atomic(folder / entry["backup"], original, 0o600)
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
            _write_atomic(Path(entry["path"]), content, entry["mode"])
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
                _write_atomic(path, _backup(folder, entry), entry["mode"])
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
