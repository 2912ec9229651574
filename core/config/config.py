"""Config v3: the one TOML file that names this host, its projects and its policies.

The parser is strict on purpose: an unknown key, a wrong type or an
out-of-range value is an error that names the exact key path and what is
allowed, because a silently ignored typo in a safety setting (for example
``control_turns.transport``) would change what Switchboard does to a live
agent. Every problem in a file is reported at once.

``render_config`` writes the canonical text; ``parse_config(render_config(c))``
equals ``c`` for every valid config.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import date, datetime, time
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from core.config.naming import Named, resolve
from core.model.defaults import HOLDING_SESSION, NAVIGATOR_WIDTH, VIEW_SESSION
from core.model.enums import (
    CompleteReturnPolicy,
    Provider,
    TaskPushPolicy,
    TeammateMode,
    TransportPolicy,
    ViewMode,
)
from core.model.errors import ConfigError, NotFound
from core.model.text import TextShape, shown, unsafe_reason

CONFIG_VERSION = 3
NIL_UUID = "00000000-0000-0000-0000-000000000000"

MAX_NAME_CHARS = 128
MAX_PATH_CHARS = 4096
MAX_URL_CHARS = 2048
# A config names a few hundred projects at most; anything near this is not one
# (and is never read whole).
MAX_CONFIG_BYTES = 1024 * 1024
MAX_SOCKET_PATH_BYTES = 100  # sun_path is 104-108 bytes including the NUL
MAX_ARGV_ITEMS = 32
MAX_ARGV_ITEM_CHARS = 1024
MAX_LIST_ITEMS = 1000
DEPTH_RANGE = (1, 32)
NAVIGATOR_WIDTH_RANGE = (16, 200)
WATCHDOG_RANGE = (0.5, 120.0)
VERSION_TIMEOUT_RANGE = (0.1, 60.0)
RETENTION_DAYS_RANGE = (0, 36_500)

DEFAULT_WATCHDOG_SECONDS = 5.0
DEFAULT_VERSION_TIMEOUT_SECONDS = 5.0

_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_SESSION_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_REMOTE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SSH_TARGET_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@:/\[\]%+-]{0,254}$")
_URL_CREDENTIALS_RE = re.compile(r"://[^/@]*:[^/@]*@")


# --------------------------------------------------------------------------- model


def setting(read: str, *args: Any, default: Any = MISSING) -> Any:
    """A config field, read from its TOML key of the same name by ``_Reader.<read>``
    (with ``args``: an enum type, bounds); no ``default`` makes the key required.
    The parser, the allowed keys and the defaults all come from these fields."""
    return field(default=default, metadata={"read": (read, args)})


@dataclass(frozen=True)
class HostConfig:
    host_id: str = setting("uuid")
    display_name: str = setting("text")


@dataclass(frozen=True)
class ViewsConfig:
    cli_default_mode: ViewMode = setting("enum", ViewMode, default=ViewMode.NAVIGATOR)
    desktop_default_mode: ViewMode = setting("enum", ViewMode, default=ViewMode.NAVIGATOR)


@dataclass(frozen=True)
class AutomationConfig:
    task_push: TaskPushPolicy = setting("enum", TaskPushPolicy,
                                        default=TaskPushPolicy.CONSERVATIVE)
    complete_return: CompleteReturnPolicy = setting("enum", CompleteReturnPolicy,
                                                    default=CompleteReturnPolicy.SYNTHESIZE)
    initial_max_depth: int = setting("integer", DEPTH_RANGE, default=1)


@dataclass(frozen=True)
class ControlTurnsConfig:
    """Host-wide: live_first uses live input only when every prerequisite is proven."""

    transport: TransportPolicy = setting("enum", TransportPolicy,
                                         default=TransportPolicy.LIVE_FIRST)
    watchdog_timeout_seconds: float = setting("number", WATCHDOG_RANGE,
                                              default=DEFAULT_WATCHDOG_SECONDS)


@dataclass(frozen=True)
class ProviderConfig:
    """How to start one provider CLI; ``command`` is an argv prefix, never a shell string.
    ``teammates`` is read only under ``[providers.claude]`` (``TEAMMATE_KEY_PROVIDERS``)."""

    command: tuple[str, ...] = setting("argv")
    enabled: bool = setting("boolean", default=True)
    version_timeout_seconds: float = setting("number", VERSION_TIMEOUT_RANGE,
                                             default=DEFAULT_VERSION_TIMEOUT_SECONDS)
    teammates: TeammateMode = setting("teammates", default=TeammateMode.IN_PROCESS)


TEAMMATE_KEY_PROVIDERS: frozenset[Provider] = frozenset({Provider.CLAUDE})
"""Agent teams with teammates of their own are Claude Code's; no other CLI has the key."""

FRAMES_REFUSED = (
    '"frames" is not available: Claude Code (2.1.332) puts each teammate\'s tmux pane '
    "in the window of its own pane ($TMUX_PANE), which is the view when the lead is "
    "shown, and has no option naming another window or pane, so a teammate would split "
    'the view (docs/cli-versions.md "Teammates in tmux panes"); use "in-process"'
)
"""Why the config refuses ``teammates = "frames"``: what the CLI lacks, in one line."""


@dataclass(frozen=True)
class ProjectConfig:
    project_id: str = setting("uuid")
    name: str = setting("text")
    root: str = setting("path")
    checkout_id: str = setting("uuid")
    complete_return: CompleteReturnPolicy | None = setting("enum", CompleteReturnPolicy,
                                                           default=None)
    preferred_provider: Provider | None = setting("enum", Provider, default=None)


@dataclass(frozen=True)
class RepositoryConfig:
    repository_id: str = setting("uuid")
    name: str = setting("text")
    url: str | None = setting("url", default=None)


@dataclass(frozen=True)
class CheckoutConfig:
    checkout_id: str = setting("uuid")
    path: str = setting("path")
    repository_id: str | None = setting("uuid", default=None)


@dataclass(frozen=True)
class TmuxConfig:
    """``socket_path`` None means the private default socket under SWITCHBOARD_HOME."""

    socket_path: str | None = setting("socket_path", default=None)
    view_session: str = setting("session_name", default=VIEW_SESSION)
    holding_session: str = setting("session_name", default=HOLDING_SESSION)
    navigator_width: int = setting("integer", NAVIGATOR_WIDTH_RANGE, default=NAVIGATOR_WIDTH)


@dataclass(frozen=True)
class HooksConfig:
    command: tuple[str, ...] = setting("argv", default=("switchboard", "hook"))


@dataclass(frozen=True)
class RemoteConfig:
    name: str = setting("remote_name")
    host_id: str = setting("uuid")
    ssh_target: str = setting("ssh_target")


@dataclass(frozen=True)
class MemoryConfig:
    """Optional memory; off by default and never a source of routing or claim authority."""

    enabled: bool = setting("boolean", default=False)


@dataclass(frozen=True)
class AttentionConfig:
    """How an agent that needs the person reaches them outside its view.

    ``status_line`` puts the counts into tmux's status-right (only where the person
    kept tmux's default); the others fire when an agent that is not being looked at
    needs input or finishes a turn. ``message`` (a 4 s tmux message on each client)
    is off by default: while a message is up, tmux 3.3a redraws no pane on that
    client, so the person's own typing and the navigator's badges showed ~4 s late.
    """

    status_line: bool = setting("boolean", default=True)
    message: bool = setting("boolean", default=False)
    bell: bool = setting("boolean", default=True)
    desktop: bool = setting("boolean", default=True)


@dataclass(frozen=True)
class PriceConfig:
    """One row of the price table: US dollars per million tokens of one model.

    ``model`` is a model id, or a prefix ending in ``*`` (``claude-sonnet-4*``);
    ``taken_on`` (YYYY-MM-DD) says when the prices were read, so an estimate shows
    its age. Rows here come before the defaults of ``core.usage.pricing``.
    """

    model: str = setting("model_pattern")
    input: float = setting("price")
    output: float = setting("price")
    cache_read: float = setting("price")
    cache_write: float = setting("price")
    taken_on: str = setting("date")


@dataclass(frozen=True)
class LimitsConfig:
    """What happens when an agent's turn ended on a usage or rate limit.

    ``auto_resume``: once the reset time the CLI stated has passed, type one fixed
    continue line into that agent (off by default: it spends the person's quota).
    """

    auto_resume: bool = setting("boolean", default=False)


class AgentToolTransport(StrEnum):
    """``[agent_tools] transport``: kept only so a config that names it still loads.

    The agent tools are always served over MCP streamable HTTP by the home's
    ``switchboard server`` (issue 38.2); the per-agent stdio shim is gone. ``shim`` is
    read and ignored (``switchboard doctor`` says so in one line); any other word is
    refused as before, so a typo is still named."""

    SHIM = "shim"
    """No longer used: read as HTTP."""
    HTTP = "http"
    """MCP streamable HTTP on 127.0.0.1, a bearer token per launch (the only transport)."""


@dataclass(frozen=True)
class AgentToolsConfig:
    """The obsolete ``[agent_tools]`` section (see ``AgentToolTransport``); never written."""

    transport: AgentToolTransport = setting("enum", AgentToolTransport,
                                            default=AgentToolTransport.HTTP)

    @property
    def obsolete_shim(self) -> bool:
        """The config still asks for the removed stdio shim."""
        return self.transport is AgentToolTransport.SHIM


INIT_EVIDENCE_DAYS = 30
"""``[retention] evidence_days`` in the config a first ``switchboard init`` writes: the
age ``switchboard prune`` uses when not told one (it only runs when asked)."""


@dataclass(frozen=True)
class RetentionConfig:
    """How long closed frames' session evidence is kept (`switchboard prune`); None
    keeps it until a prune names an age."""

    evidence_days: int | None = setting("integer", RETENTION_DAYS_RANGE, default=None)



OFF_BY_DEFAULT: frozenset[Provider] = frozenset({Provider.GEMINI, Provider.OPENCODE})
"""Providers a new config lists but leaves disabled (``enabled = true`` turns one on), so
``doctor`` does not fail for a person who has not installed them."""


def default_providers() -> dict[Provider, ProviderConfig]:
    return {provider: ProviderConfig(command=(provider.value,),
                                     enabled=provider not in OFF_BY_DEFAULT)
            for provider in _PROVIDER_ORDER}


@dataclass(frozen=True)
class Config:
    """A validated Config v3. ``generation_id`` is "" only for an unbound init template."""

    config_version: int
    generation_id: str
    host: HostConfig
    views: ViewsConfig = field(default_factory=ViewsConfig)
    automation: AutomationConfig = field(default_factory=AutomationConfig)
    control_turns: ControlTurnsConfig = field(default_factory=ControlTurnsConfig)
    providers: dict[Provider, ProviderConfig] = field(default_factory=lambda: default_providers())
    projects: tuple[ProjectConfig, ...] = ()
    repositories: tuple[RepositoryConfig, ...] = ()
    checkouts: tuple[CheckoutConfig, ...] = ()
    tmux: TmuxConfig = field(default_factory=TmuxConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)
    remotes: tuple[RemoteConfig, ...] = ()
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    attention: AttentionConfig = field(default_factory=AttentionConfig)
    prices: tuple[PriceConfig, ...] = ()
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    agent_tools: AgentToolsConfig = field(default_factory=AgentToolsConfig)

    @property
    def default_provider(self) -> Provider:
        """What runs when neither the frame nor its project names a provider: the first
        enabled one, else Claude Code (the one place this default is written)."""
        enabled = [p for p, c in self.providers.items() if c.enabled]
        return enabled[0] if enabled else Provider.CLAUDE

    def project(self, project_id: str) -> ProjectConfig:
        """The configured project with this id; NotFound names the config fix."""
        for project in self.projects:
            if project.project_id == project_id:
                return project
        raise NotFound(
            f"project {project_id} is not in the config; add it under [[projects]]",
            code="project_not_configured",
        )

    def project_id_for(self, name_or_id: str) -> str:
        """The id of the project a person named by name, id prefix or id
        (``core.config.naming``'s rules, as every command taking a project): NotFound
        lists the known names, AmbiguousName the candidates."""
        return resolve(name_or_id, [Named(p.project_id, p.name) for p in self.projects],
                       what="project", listing="switchboard project list").id

    def checkout(self, checkout_id: str) -> CheckoutConfig:
        for checkout in self.checkouts:
            if checkout.checkout_id == checkout_id:
                return checkout
        raise NotFound(
            f"checkout {checkout_id} is not in the config; add it under [[checkouts]]",
            code="checkout_not_configured",
        )

    def effective_complete_return(self, project_id: str) -> CompleteReturnPolicy:
        """The project's override when set, otherwise ``automation.complete_return``."""
        override = self.project(project_id).complete_return
        return override if override is not None else self.automation.complete_return

    def with_generation(self, generation_id: str) -> Config:
        """Bind an init/reset template to its newly allocated generation (validated)."""
        return parse_config(render_config(replace(self, generation_id=generation_id)))


_PROVIDER_ORDER: tuple[Provider, ...] = tuple(sorted(Provider, key=lambda p: p.value))


# --------------------------------------------------------------------------- reading

_Missing = object()
_R = TypeVar("_R")
_E = TypeVar("_E", bound=StrEnum)


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, datetime | date | time):
        return "date/time"
    return type(value).__name__


class _Reader:
    """Collects every problem with its key path, so one run reports them all."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, message: str) -> object:
        self.problems.append(f"{path}: {message}")
        return _Missing

    def table(
        self, parent: Mapping[str, Any], key: str, path: str, allowed: tuple[str, ...]
    ) -> dict[str, Any] | None:
        """The sub-table at ``key`` ({} when absent), with unknown keys reported."""
        value = parent.get(key, {})
        if not isinstance(value, dict):
            self.fail(path, f"must be a table (got {_toml_type(value)})")
            return None
        self.known_keys(value, path, allowed)
        return value

    def known_keys(self, table: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
        for key in table:
            if key not in allowed:
                where = f"{path}.{key}" if path else key
                self.fail(where, f"unknown key; allowed keys here: {', '.join(allowed)}")

    def get(
        self,
        table: Mapping[str, Any],
        key: str,
        path: str,
        convert: Callable[[object, str], object],
        *,
        default: object = _Missing,
    ) -> Any:
        where = f"{path}.{key}" if path else key
        if key not in table:
            if default is _Missing:
                return self.fail(where, "is required")
            return default
        return convert(table[key], where)

    # --- converters: each returns the typed value or records a problem

    def text(self, value: object, path: str, *, max_chars: int = MAX_NAME_CHARS) -> Any:
        if not isinstance(value, str):
            return self.fail(path, f"must be a string (got {_toml_type(value)})")
        if not value.strip():
            return self.fail(path, "must not be empty or blank")
        if len(value) > max_chars:
            return self.fail(path, f"must be at most {max_chars} characters (got {len(value)})")
        unsafe = unsafe_reason("the value", value, TextShape.LINE)  # the shared rule
        if unsafe is not None:
            return self.fail(path, unsafe)
        return value

    def uuid(self, value: object, path: str) -> Any:
        if not isinstance(value, str):
            return self.fail(path, f"must be a UUID string (got {_toml_type(value)})")
        if not _UUID_RE.fullmatch(value):
            return self.fail(path, "must be a UUID like 0b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c10")
        value = value.lower()
        if value == NIL_UUID:
            return self.fail(path, "must be a non-nil UUID")
        return value

    def enum(self, value: object, path: str, enum_type: type[_E]) -> Any:
        allowed = ", ".join(member.value for member in enum_type)
        if not isinstance(value, str):
            return self.fail(path, f"must be one of {allowed} (got {_toml_type(value)})")
        try:
            return enum_type(value)
        except ValueError:
            got = shown(value) if len(value) <= 64 else shown(value[:63]) + "…"
            return self.fail(path, f"must be one of {allowed} (got {got!r})")

    def teammates(self, value: object, path: str) -> Any:
        """A ``TeammateMode``; ``frames`` is a known value that is refused with its reason."""
        mode = self.enum(value, path, TeammateMode)
        if mode is TeammateMode.FRAMES:
            return self.fail(path, FRAMES_REFUSED)
        return mode

    def integer(self, value: object, path: str, bounds: tuple[int, int]) -> Any:
        low, high = bounds
        if isinstance(value, bool) or not isinstance(value, int):
            return self.fail(path, f"must be an integer from {low} to {high} "
                                   f"(got {_toml_type(value)})")
        if not low <= value <= high:
            return self.fail(path, f"must be an integer from {low} to {high} (got {value})")
        return value

    def number(self, value: object, path: str, bounds: tuple[float, float]) -> Any:
        low, high = bounds
        if isinstance(value, bool) or not isinstance(value, int | float):
            return self.fail(path, f"must be a number of seconds from {low:g} to {high:g} "
                                   f"(got {_toml_type(value)})")
        number = float(value)
        if not math.isfinite(number) or not low <= number <= high:
            return self.fail(path, f"must be a number of seconds from {low:g} to {high:g} "
                                   f"(got {value})")
        return number

    def price(self, value: object, path: str) -> Any:
        low, high = PRICE_RANGE
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(float(value)) or not low <= float(value) <= high:
            return self.fail(path, f"must be a number of US dollars per million tokens from "
                                   f"{low:g} to {high:g} (got {_toml_type(value)})")
        return float(value)

    def model_pattern(self, value: object, path: str) -> Any:
        if not isinstance(value, str) or not _MODEL_RE.fullmatch(value):
            return self.fail(path, "must be a model id such as claude-sonnet-4-5, or a prefix "
                                   "ending in * such as claude-sonnet-4*")
        return value

    def date(self, value: object, path: str) -> Any:
        if not isinstance(value, str) or not _DATE_RE.fullmatch(value):
            return self.fail(path, "must be the date the prices were read, as YYYY-MM-DD")
        return value

    def boolean(self, value: object, path: str) -> Any:
        if not isinstance(value, bool):
            return self.fail(path, f"must be true or false (got {_toml_type(value)})")
        return value

    def argv(self, value: object, path: str) -> Any:
        if not isinstance(value, list) or not value:
            got = _toml_type(value)
            return self.fail(path, f"must be a non-empty array of strings, e.g. [\"claude\"] "
                                   f"(got {got if value != [] else 'empty array'})")
        if len(value) > MAX_ARGV_ITEMS:
            return self.fail(path, f"must have at most {MAX_ARGV_ITEMS} items (got {len(value)})")
        items = [self.text(item, f"{path}[{index}]", max_chars=MAX_ARGV_ITEM_CHARS)
                 for index, item in enumerate(value)]
        if any(item is _Missing for item in items):
            return _Missing
        if items[0].startswith("-"):
            return self.fail(f"{path}[0]", "must name a program, not an option")
        return tuple(items)

    def path(self, value: object, path: str) -> Any:
        text = self.text(value, path, max_chars=MAX_PATH_CHARS)
        if text is _Missing:
            return text
        if not (text.startswith("/") or text == "~" or text.startswith("~/")):
            return self.fail(path, "must be an absolute path (starting with / or ~/)")
        return text

    def socket_path(self, value: object, path: str) -> Any:
        text = self.path(value, path)
        if text is _Missing:
            return text
        size = len(text.encode("utf-8"))
        if size > MAX_SOCKET_PATH_BYTES:
            return self.fail(path, f"must be at most {MAX_SOCKET_PATH_BYTES} bytes, the Unix "
                                   f"socket limit (got {size})")
        return text

    def session_name(self, value: object, path: str) -> Any:
        if not isinstance(value, str) or not _SESSION_NAME_RE.fullmatch(value):
            return self.fail(path, "must be a tmux session name of 1-64 letters, digits, "
                                   "'_' or '-'")
        return value

    def remote_name(self, value: object, path: str) -> Any:
        if not isinstance(value, str) or not _REMOTE_NAME_RE.fullmatch(value):
            return self.fail(path, "must be 1-64 letters, digits, '.', '_' or '-', "
                                   "starting with a letter or digit")
        return value

    def ssh_target(self, value: object, path: str) -> Any:
        if not isinstance(value, str) or not _SSH_TARGET_RE.fullmatch(value):
            return self.fail(path, "must be an ssh destination such as user@host or a Host "
                                   "alias (no spaces, not starting with '-')")
        return value

    def url(self, value: object, path: str) -> Any:
        text = self.text(value, path, max_chars=MAX_URL_CHARS)
        if text is _Missing:
            return text
        if any(ch.isspace() for ch in text):
            return self.fail(path, "must not contain whitespace")
        if _URL_CREDENTIALS_RE.search(text):
            return self.fail(path, "must not embed a password; use your git credential helper")
        return text

    def array_of_tables(self, root: Mapping[str, Any], key: str) -> list[tuple[str, dict]]:
        value = root.get(key, [])
        if not isinstance(value, list):
            self.fail(key, f"must be an array of tables, written [[{key}]] "
                           f"(got {_toml_type(value)})")
            return []
        if len(value) > MAX_LIST_ITEMS:
            self.fail(key, f"must have at most {MAX_LIST_ITEMS} entries (got {len(value)})")
            return []
        rows = []
        for index, item in enumerate(value):
            where = f"{key}[{index}]"
            if not isinstance(item, dict):
                self.fail(where, f"must be a table (got {_toml_type(item)})")
                continue
            rows.append((where, item))
        return rows


_TOP_KEYS = (
    "config_version", "generation_id", "host", "views", "automation", "control_turns",
    "providers", "projects", "repositories", "checkouts", "tmux", "hooks", "remotes", "memory",
    "attention", "prices", "limits", "retention", "agent_tools",
)


def _keys(record_type: type) -> tuple[str, ...]:
    """The TOML keys of a section: its dataclass's fields."""
    return tuple(item.name for item in fields(record_type))


def _record(reader: _Reader, table: Mapping[str, Any], where: str, record_type: type[_R], *,
            defaults: Mapping[str, Any] | None = None) -> _R:
    """One section (or one row of an array of tables) read field by field, each by the
    converter its ``setting`` names; unknown keys are reported; ``defaults`` overrides a
    field's own (a provider's command is its name)."""
    reader.known_keys(table, where, _keys(record_type))
    values: dict[str, Any] = {}
    for item in fields(record_type):  # type: ignore[arg-type]
        method, args = item.metadata["read"]
        convert = partial(_convert, getattr(reader, method), args)
        default = (defaults or {}).get(item.name, item.default)
        values[item.name] = reader.get(table, item.name, where, convert,
                                       default=_Missing if default is MISSING else default)
    return record_type(**values)


def _convert(method: Callable[..., object], args: tuple[Any, ...], value: object,
             path: str) -> object:
    return method(value, path, *args)


def _section(reader: _Reader, root: Mapping[str, Any], name: str, record_type: type[_R]) -> _R:
    """A top-level table read into its dataclass ({} when absent: every default)."""
    table = reader.table(root, name, name, _keys(record_type))
    return _record(reader, table or {}, name, record_type)


def _rows(reader: _Reader, root: Mapping[str, Any], name: str,
          record_type: type[_R]) -> tuple[_R, ...]:
    """An array of tables, each row read into ``record_type``."""
    return tuple(_record(reader, row, where, record_type)
                 for where, row in reader.array_of_tables(root, name))


PRICE_RANGE = (0.0, 100000.0)
_MODEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}\*?$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class _NewerVersion(Exception):
    pass


def _version(reader: _Reader, root: Mapping[str, Any]) -> None:
    if "config_version" not in root:
        reader.fail("config_version", f"is required and must be {CONFIG_VERSION}")
        return
    value = root["config_version"]
    if isinstance(value, bool) or not isinstance(value, int):
        reader.fail("config_version", f"must be the integer {CONFIG_VERSION} "
                                      f"(got {_toml_type(value)})")
    elif value > CONFIG_VERSION:
        # A newer format may legitimately have keys this version does not know, so
        # report only the version rather than a list of misleading "unknown key"s.
        reader.problems = [f"config_version: is {value}: this file was written by a newer "
                           f"Switchboard (this one reads version {CONFIG_VERSION}); "
                           "upgrade Switchboard"]
        raise _NewerVersion
    elif value != CONFIG_VERSION:
        reader.fail("config_version", f"is {value}: only version {CONFIG_VERSION} is "
                                      "supported; run `switchboard init` to write a new config")


def _read_providers(reader: _Reader, root: Mapping[str, Any]) -> dict[Provider, ProviderConfig]:
    allowed = tuple(p.value for p in _PROVIDER_ORDER)
    table = root.get("providers", {})
    providers = default_providers()
    if not isinstance(table, dict):
        reader.fail("providers", f"must be a table (got {_toml_type(table)})")
        return providers
    for key, entry in table.items():
        where = f"providers.{key}"
        if key not in allowed:
            reader.fail(where, f"unknown provider; must be one of {', '.join(allowed)}")
            continue
        if not isinstance(entry, dict):
            reader.fail(where, f"must be a table (got {_toml_type(entry)})")
            continue
        provider = Provider(key)
        if "teammates" in entry and provider not in TEAMMATE_KEY_PROVIDERS:
            reader.fail(f"{where}.teammates", "only [providers.claude] has this key "
                                              "(Claude Code's agent teams); remove it here")
            entry = {k: v for k, v in entry.items() if k != "teammates"}
        providers[provider] = _record(reader, entry, where, ProviderConfig,
                                      defaults={"command": (provider.value,)})
    return providers


def _check_references(reader: _Reader, config: Config) -> None:
    """Cross-entry rules, run only once every field is individually valid."""

    def unique(rows: tuple, section: str, attr: str) -> set:
        seen: set = set()
        for index, row in enumerate(rows):
            value = getattr(row, attr)
            if value in seen:
                reader.fail(f"{section}[{index}].{attr}", f"duplicates an earlier {attr} "
                                                         f"({value})")
            seen.add(value)
        return seen

    repository_ids = unique(config.repositories, "repositories", "repository_id")
    checkout_ids = unique(config.checkouts, "checkouts", "checkout_id")
    unique(config.checkouts, "checkouts", "path")
    unique(config.projects, "projects", "project_id")
    unique(config.projects, "projects", "name")
    unique(config.remotes, "remotes", "name")
    unique(config.remotes, "remotes", "host_id")
    for index, checkout in enumerate(config.checkouts):
        if checkout.repository_id is not None and checkout.repository_id not in repository_ids:
            reader.fail(f"checkouts[{index}].repository_id",
                        f"names repository {checkout.repository_id}, which is not listed "
                        "under [[repositories]]")
    for index, project in enumerate(config.projects):
        if project.checkout_id not in checkout_ids:
            reader.fail(f"projects[{index}].checkout_id",
                        f"names checkout {project.checkout_id}, which is not listed under "
                        "[[checkouts]]")
    for index, remote in enumerate(config.remotes):
        if remote.host_id == config.host.host_id:
            reader.fail(f"remotes[{index}].host_id", "must differ from host.host_id (a remote "
                                                     "is another host)")
    if config.tmux.view_session == config.tmux.holding_session:
        reader.fail("tmux.holding_session", "must differ from tmux.view_session")


def parse_config(
    text: str, *, source: str = "<config>", allow_missing_generation: bool = False
) -> Config:
    """Parse and validate Config v3 text; ConfigError lists every problem by key path.

    ``allow_missing_generation`` accepts an init/reset template without
    ``generation_id`` (the result has ``generation_id == ""``); the canonical
    stored config always has one.
    """
    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}", code="config_syntax") from None

    reader = _Reader()
    try:
        _version(reader, root)
    except _NewerVersion:
        _raise_problems(reader, source)
    reader.known_keys(root, "", _TOP_KEYS)
    if "generation_id" in root or not allow_missing_generation:
        generation_id = reader.get(root, "generation_id", "", reader.uuid)
    else:
        generation_id = ""

    if root.get("host") is None:
        reader.fail("host", "is required: a [host] table with host_id and display_name")
    host = _section(reader, root, "host", HostConfig)
    views = _section(reader, root, "views", ViewsConfig)
    automation = _section(reader, root, "automation", AutomationConfig)
    control_turns = _section(reader, root, "control_turns", ControlTurnsConfig)
    providers = _read_providers(reader, root)
    repositories = _rows(reader, root, "repositories", RepositoryConfig)
    checkouts = _rows(reader, root, "checkouts", CheckoutConfig)
    projects = _rows(reader, root, "projects", ProjectConfig)
    tmux = _section(reader, root, "tmux", TmuxConfig)
    hooks = _section(reader, root, "hooks", HooksConfig)
    remotes = _rows(reader, root, "remotes", RemoteConfig)
    memory = _section(reader, root, "memory", MemoryConfig)
    attention = _section(reader, root, "attention", AttentionConfig)
    prices = _rows(reader, root, "prices", PriceConfig)
    limits = _section(reader, root, "limits", LimitsConfig)
    retention = _section(reader, root, "retention", RetentionConfig)
    agent_tools = _section(reader, root, "agent_tools", AgentToolsConfig)

    _raise_problems(reader, source)
    config = Config(
        config_version=CONFIG_VERSION,
        generation_id=generation_id,
        host=host,
        views=views,
        automation=automation,
        control_turns=control_turns,
        providers=providers,
        projects=tuple(projects),
        repositories=tuple(repositories),
        checkouts=tuple(checkouts),
        tmux=tmux,
        hooks=hooks,
        remotes=tuple(remotes),
        memory=memory,
        attention=attention,
        prices=tuple(prices),
        limits=limits,
        retention=retention,
        agent_tools=agent_tools,
    )
    _check_references(reader, config)
    _raise_problems(reader, source)
    return config


def _raise_problems(reader: _Reader, source: str) -> None:
    if not reader.problems:
        return
    if len(reader.problems) == 1:
        raise ConfigError(f"{source}: {reader.problems[0]}")
    lines = "\n".join(f"  {problem}" for problem in reader.problems)
    raise ConfigError(f"{source}: {len(reader.problems)} problems:\n{lines}")


def load_config(path: Path) -> Config:
    """Read the stored config; a missing file says how to create one."""
    from core.model.files import read_bounded

    try:
        data = read_bounded(path, MAX_CONFIG_BYTES, "config file")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no config file; run `switchboard init` to create one",
            code="config_missing",
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: is not UTF-8 text (byte {exc.start})",
                          code="config_syntax") from None
    return parse_config(text, source=str(path))


def views_socket(config: Config, home_root: Path) -> str:
    """The tmux server every view lives on: the configured socket, else the private
    one under the home (the stage's rule; commands that type into or read panes use
    it too, never the server of the tmux client they happen to run in)."""
    return config.tmux.socket_path or str(home_root / "tmux.sock")


def configured_views_socket(config_path: Path, home_root: Path) -> str | None:
    """``views_socket`` of the stored config, or None when there is no config yet
    (a broker used without Switchboard views). A broken config is an error: it
    must not silently send typing to some other server."""
    if not config_path.exists():
        return None
    return views_socket(load_config(config_path), home_root)


def default_config(*, generation_id: str, host_id: str, display_name: str) -> Config:
    """The config ``switchboard init`` writes: defaults everywhere, validated.

    Pass ``generation_id=""`` for an unbound template.
    """
    config = Config(
        config_version=CONFIG_VERSION,
        generation_id=generation_id,
        host=HostConfig(host_id=host_id, display_name=display_name),
    )
    return parse_config(render_config(config), source="<default config>",
                        allow_missing_generation=generation_id == "")


# --------------------------------------------------------------------------- writing


def toml_string(value: str) -> str:
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, StrEnum):
        return toml_string(value.value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"cannot write non-finite number {value!r}")
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _pairs(pairs: list[tuple[str, object]]) -> list[str]:
    return [f"{key} = {_toml_value(value)}" for key, value in pairs if value is not None]


def render_config(config: Config) -> str:
    """Canonical Config v3 text: fixed section and key order, optional keys omitted when unset."""
    lines = ["# Switchboard configuration (Config v3).", ""]
    top: list[tuple[str, object]] = [("config_version", config.config_version)]
    if config.generation_id:
        top.append(("generation_id", config.generation_id))
    lines += _pairs(top)

    def section(header: str, pairs: list[tuple[str, object]]) -> None:
        lines.extend(["", header, *_pairs(pairs)])

    section("[host]", [("host_id", config.host.host_id),
                       ("display_name", config.host.display_name)])
    section("[views]", [("cli_default_mode", config.views.cli_default_mode),
                        ("desktop_default_mode", config.views.desktop_default_mode)])
    section("[automation]", [("task_push", config.automation.task_push),
                             ("complete_return", config.automation.complete_return),
                             ("initial_max_depth", config.automation.initial_max_depth)])
    section("[control_turns]", [
        ("transport", config.control_turns.transport),
        ("watchdog_timeout_seconds", float(config.control_turns.watchdog_timeout_seconds)),
    ])
    for provider in sorted(config.providers, key=lambda p: p.value):
        entry = config.providers[provider]
        pairs: list[tuple[str, object]] = [
            ("command", entry.command), ("enabled", entry.enabled),
            ("version_timeout_seconds", float(entry.version_timeout_seconds)),
        ]
        if entry.teammates is not TeammateMode.IN_PROCESS:
            pairs.append(("teammates", entry.teammates))
        section(f"[providers.{provider.value}]", pairs)
    section("[tmux]", [("socket_path", config.tmux.socket_path),
                       ("view_session", config.tmux.view_session),
                       ("holding_session", config.tmux.holding_session),
                       ("navigator_width", config.tmux.navigator_width)])
    section("[hooks]", [("command", config.hooks.command)])
    section("[memory]", [("enabled", config.memory.enabled)])
    section("[attention]", [("status_line", config.attention.status_line),
                            ("message", config.attention.message),
                            ("bell", config.attention.bell),
                            ("desktop", config.attention.desktop)])
    if config.limits != LimitsConfig():
        section("[limits]", [("auto_resume", config.limits.auto_resume)])
    if config.retention.evidence_days is not None:
        section("[retention]", [("evidence_days", config.retention.evidence_days)])
    for repository in config.repositories:
        section("[[repositories]]", [("repository_id", repository.repository_id),
                                     ("name", repository.name), ("url", repository.url)])
    for checkout in config.checkouts:
        section("[[checkouts]]", [("checkout_id", checkout.checkout_id),
                                  ("repository_id", checkout.repository_id),
                                  ("path", checkout.path)])
    for project in config.projects:
        section("[[projects]]", [("project_id", project.project_id), ("name", project.name),
                                 ("root", project.root), ("checkout_id", project.checkout_id),
                                 ("complete_return", project.complete_return),
                                 ("preferred_provider", project.preferred_provider)])
    for remote in config.remotes:
        section("[[remotes]]", [("name", remote.name), ("host_id", remote.host_id),
                                ("ssh_target", remote.ssh_target)])
    for price in config.prices:
        section("[[prices]]", [("model", price.model), ("input", price.input),
                               ("output", price.output), ("cache_read", price.cache_read),
                               ("cache_write", price.cache_write),
                               ("taken_on", price.taken_on)])
    return "\n".join(lines) + "\n"
