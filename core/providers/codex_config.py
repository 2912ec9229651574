"""Codex's hook files: the ``-c`` overrides of one launch (``codex_session_hooks``:
the hooks and the trust of exactly their definitions, see ``core.providers.codex``)
and, for an explicit ``hooks install``, a config directory laid out like
``~/.codex`` (``hooks.json`` + ``config.toml`` with ``notify``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass

from core.model.enums import Provider
from core.model.errors import ProviderError
from core.providers.hook_files import (
    HOOK_TIMEOUT_S,
    check_hook_command,
    hook_argv,
    hook_groups,
    merge_hooks,
)
from core.providers.hooks import CODEX_HOOK_EVENTS, CODEX_NOTIFY_EVENT

CODEX_HOOKS_FILE = "hooks.json"


SESSION_FLAGS_SOURCE = "/<session-flags>/config.toml"
"""How Codex names the config layer that ``-c`` overrides form, in hook trust keys."""



def hook_event_label(event: str) -> str:
    """``PermissionRequest`` -> ``permission_request``: the event as trust keys spell it."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()



def hook_trust_hash(event: str, command: str, timeout_s: int) -> str:
    """The hash Codex computes for one command hook alone in a matcher-less group."""
    identity = {"event_name": hook_event_label(event),
                "hooks": [{"type": "command", "command": command, "timeout": timeout_s,
                           "async": False}]}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()



@dataclass(frozen=True)
class SessionHooks:
    """Command hooks for one launch, each given as ``-c hooks.<Event>`` and trusted
    by the hash of exactly that definition (``-c hooks.state``)."""

    commands: tuple[tuple[str, str], ...]
    """(event, shell command line) pairs, one per event."""
    timeout_s: int

    def __post_init__(self) -> None:
        events = [event for event, _ in self.commands]
        if len(set(events)) != len(events):
            raise ProviderError("one hook per event: the trust keys count groups",
                                code="launch_invalid")
        for event, command in self.commands:
            if not re.fullmatch(r"[A-Z][A-Za-z]+", event):
                raise ProviderError(f"not a Codex hook event: {event!r}", code="launch_invalid")
            if not command.strip() or "\n" in command or "\x00" in command:
                raise ProviderError("a hook command must be one non-empty line",
                                    code="launch_invalid")
        if self.timeout_s < 1:
            raise ProviderError("a hook timeout is at least 1 s", code="launch_invalid")

    def trust_keys(self) -> dict[str, str]:
        """Trust key -> trusted hash, as Codex's hook list would show them."""
        return {f"{SESSION_FLAGS_SOURCE}:{hook_event_label(event)}:0:0":
                hook_trust_hash(event, command, self.timeout_s)
                for event, command in self.commands}

    def overrides(self) -> tuple[str, ...]:
        flags: list[str] = []
        for event, command in self.commands:
            flags += ["-c", f"hooks.{event}=[{{hooks = [{{type = \"command\", command = "
                            f"{toml_string(command)}, timeout = {self.timeout_s}}}]}}]"]
        if self.commands:
            state = ", ".join(f"{toml_string(key)} = {{trusted_hash = {toml_string(value)}}}"
                              for key, value in self.trust_keys().items())
            flags += ["-c", f"hooks.state={{{state}}}"]
        return tuple(flags)



def toml_string(value: str) -> str:
    """A TOML basic string.

    JSON string escapes are TOML basic-string escapes, except raw DEL (TOML forbids it).
    """
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")



CODEX_CONFIG_FILE = "config.toml"


CODEX_NOTIFY_BANNER = (
    "# Added by `switchboard hooks install`; `switchboard hooks uninstall` restores this file.\n"
)


def render_codex_hooks(hook_command: Sequence[str], existing: bytes | None = None) -> bytes:
    groups = hook_groups(check_hook_command(hook_command), Provider.CODEX, CODEX_HOOK_EVENTS)
    return merge_hooks(existing, groups, f"the Codex {CODEX_HOOKS_FILE}")


def codex_session_hooks(hook_command: Sequence[str]) -> SessionHooks:
    """Our Codex hooks for one launch: the same command lines as an installed
    ``hooks.json``, given as trusted ``-c`` overrides. No ``notify``: the Stop hook
    already ends a turn, and a ``-c notify`` would replace the person's own."""
    command = check_hook_command(hook_command)
    return SessionHooks(
        commands=tuple((event, shlex.join(hook_argv(command, Provider.CODEX, event)))
                       for event in CODEX_HOOK_EVENTS),
        timeout_s=HOOK_TIMEOUT_S)


def render_codex_config(hook_command: Sequence[str], existing: bytes | None = None) -> bytes:
    """Prepend a top-level ``notify = [...]`` (Codex appends the JSON as the last argv)."""
    argv = hook_argv(check_hook_command(hook_command), Provider.CODEX, CODEX_NOTIFY_EVENT)
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
