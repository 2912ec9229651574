"""The hook command lines and JSON hook groups both CLIs read, and the file writes
a hook install and a launch's settings share.

Every installed or per-launch hook is one shape, ``<hook command> --provider P
EVENT`` with one timeout; the providers differ only in which files carry them
(``core.providers.claude_settings``, ``core.providers.codex_config``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path

from core.model.enums import Provider
from core.model.errors import ProviderError

HOOK_TIMEOUT_S = 30



def hook_argv(hook_command: Sequence[str], provider: Provider, event: str) -> list[str]:
    """``<hook command> --provider P EVENT``: the one shape every installed hook uses."""
    return [*hook_command, "--provider", Provider(provider).value, event]



def check_hook_command(hook_command: Sequence[str]) -> tuple[str, ...]:
    command = tuple(hook_command)
    if not command or not all(isinstance(part, str) and part for part in command):
        raise ProviderError("the hook command must be a non-empty argv", code="hooks_invalid")
    if any("\x00" in part or "\n" in part for part in command):
        raise ProviderError("the hook command contains a NUL or newline", code="hooks_invalid")
    return command



def hook_groups(hook_command: Sequence[str], provider: Provider, events: Sequence[str]) -> dict:
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



def merge_hooks(existing: bytes | None, groups: dict, what: str) -> bytes:
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



def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ProviderError(f"{path} is a directory, not a file", code="hooks_invalid") from None



def write_atomic(path: Path, content: bytes, mode: int | None) -> None:
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
