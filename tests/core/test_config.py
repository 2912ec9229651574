"""Config v3: round trips, and every error names its key path and what is allowed."""

from __future__ import annotations

import re
import tomllib
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config.config import (
    AutomationConfig,
    CheckoutConfig,
    Config,
    ControlTurnsConfig,
    HooksConfig,
    HostConfig,
    MemoryConfig,
    ProjectConfig,
    ProviderConfig,
    RemoteConfig,
    RepositoryConfig,
    TmuxConfig,
    ViewsConfig,
    default_config,
    load_config,
    parse_config,
    render_config,
)
from core.model.enums import CompleteReturnPolicy, Provider, TransportPolicy, ViewMode
from core.model.errors import ConfigError, NotFound
from core.model.text import UNSAFE_CHARS

GEN = "0b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c10"
HOST = "1b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c11"
REMOTE_HOST = "2b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c12"
REPO = "3b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c13"
CHECKOUT = "4b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c14"
PROJECT = "5b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c15"
PROJECT2 = "6b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c16"

CONTRACT_EXAMPLE = f"""
config_version = 3
generation_id = "{GEN}"
[host]
host_id = "{HOST}"
display_name = "workstation"
[views]
cli_default_mode = "navigator"
desktop_default_mode = "navigator"
[automation]
task_push = "conservative"
complete_return = "synthesize"
initial_max_depth = 1
[control_turns]
transport = "live_first"
watchdog_timeout_seconds = 5
"""

FULL = CONTRACT_EXAMPLE + f"""
[providers.claude]
command = ["claude", "--verbose"]
enabled = true
version_timeout_seconds = 2.5

[providers.codex]
command = ["/opt/codex/bin/codex"]
enabled = false

[tmux]
socket_path = "/tmp/sb/tmux.sock"
view_session = "sb"
holding_session = "_hold"
navigator_width = 44

[hooks]
command = ["/usr/local/bin/switchboard", "hook"]

[memory]
enabled = true

[[repositories]]
repository_id = "{REPO}"
name = "switchboard"
url = "git@github.com:example/switchboard.git"

[[checkouts]]
checkout_id = "{CHECKOUT}"
repository_id = "{REPO}"
path = "/home/me/src/switchboard"

[[projects]]
project_id = "{PROJECT}"
name = "Switchboard"
root = "/home/me/src/switchboard"
checkout_id = "{CHECKOUT}"
complete_return = "handoff"
preferred_provider = "codex"

[[projects]]
project_id = "{PROJECT2}"
name = "Docs"
root = "~/src/switchboard/docs"
checkout_id = "{CHECKOUT}"

[[remotes]]
name = "build-box"
host_id = "{REMOTE_HOST}"
ssh_target = "me@build.example.org"
"""


def _error(text: str, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, **kwargs)  # type: ignore[arg-type]
    return caught.value.message


# --------------------------------------------------------------------------- happy paths


def test_contract_example_parses_with_defaults() -> None:
    config = parse_config(CONTRACT_EXAMPLE)
    assert config.config_version == 3
    assert config.generation_id == GEN
    assert config.host == HostConfig(HOST, "workstation")
    assert config.control_turns == ControlTurnsConfig(TransportPolicy.LIVE_FIRST, 5.0)
    assert config.providers[Provider.CLAUDE].command == ("claude",)
    assert config.providers[Provider.CODEX].command == ("codex",)
    assert config.memory.enabled is False
    assert config.tmux == TmuxConfig()
    assert config.hooks.command == ("switchboard", "hook")
    assert config.projects == ()


def test_full_config_parses_every_section() -> None:
    config = parse_config(FULL)
    assert config.providers[Provider.CLAUDE] == ProviderConfig(("claude", "--verbose"), True, 2.5)
    assert config.providers[Provider.CODEX].enabled is False
    assert config.tmux == TmuxConfig("/tmp/sb/tmux.sock", "sb", "_hold", 44)
    assert config.memory == MemoryConfig(enabled=True)
    assert config.repositories[0].url == "git@github.com:example/switchboard.git"
    assert config.checkouts == (CheckoutConfig(CHECKOUT, "/home/me/src/switchboard", REPO),)
    assert config.projects[0].preferred_provider is Provider.CODEX
    assert config.remotes == (RemoteConfig("build-box", REMOTE_HOST, "me@build.example.org"),)


def test_round_trip_is_exact_and_render_is_stable() -> None:
    config = parse_config(FULL)
    text = render_config(config)
    assert parse_config(text) == config
    assert render_config(parse_config(text)) == text


def test_uuids_are_normalised_to_lowercase() -> None:
    config = parse_config(CONTRACT_EXAMPLE.replace(GEN, GEN.upper()))
    assert config.generation_id == GEN


def test_project_lookup_and_effective_complete_return() -> None:
    config = parse_config(FULL)
    assert config.project(PROJECT).name == "Switchboard"
    assert config.effective_complete_return(PROJECT) is CompleteReturnPolicy.HANDOFF
    assert config.effective_complete_return(PROJECT2) is CompleteReturnPolicy.SYNTHESIZE
    with pytest.raises(NotFound, match="not in the config"):
        config.project(str(uuid.uuid4()))


def test_default_config_and_binding_a_template() -> None:
    template = default_config(generation_id="", host_id=HOST, display_name="me")
    text = render_config(template)
    assert "generation_id" not in text
    assert parse_config(text, allow_missing_generation=True) == template
    assert "generation_id: is required" in _error(text)
    bound = template.with_generation(GEN)
    assert bound.generation_id == GEN
    assert default_config(generation_id=GEN, host_id=HOST, display_name="me") == bound
    with pytest.raises(ConfigError, match="host.display_name"):
        default_config(generation_id=GEN, host_id=HOST, display_name="bad\x1b[2J")


def test_load_config_missing_file_says_run_init(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "config.toml")
    assert "switchboard init" in caught.value.message
    assert caught.value.code == "config_missing"


def test_load_config_reads_file_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FULL, encoding="utf-8")
    assert load_config(path) == parse_config(FULL)
    path.write_bytes(b"config_version = 3\n\xff\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)
    path.write_text(FULL.replace('view_session = "sb"', 'view_session = "s b"'), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(str(path))):
        load_config(path)


# --------------------------------------------------------------------------- errors


def test_syntax_error_reports_line_and_column() -> None:
    message = _error(CONTRACT_EXAMPLE + "\nbroken = = 1\n", source="cfg.toml")
    assert message.startswith("cfg.toml: invalid TOML")
    assert re.search(r"line \d+, column \d+", message)


def test_newer_version_says_newer_switchboard_and_nothing_else() -> None:
    text = CONTRACT_EXAMPLE.replace("config_version = 3", "config_version = 4") + "future = 1\n"
    message = _error(text)
    assert "config_version" in message and "newer Switchboard" in message
    assert "future" not in message


def test_older_version_points_to_init() -> None:
    message = _error(CONTRACT_EXAMPLE.replace("config_version = 3", "config_version = 2"))
    assert "config_version" in message and "switchboard init" in message


def test_all_problems_are_reported_at_once() -> None:
    text = (CONTRACT_EXAMPLE.replace('"live_first"', '"sometimes"')
            .replace('"conservative"', '"eager"'))
    message = _error(text)
    assert "2 problems" in message
    assert "control_turns.transport: must be one of live_first, resume_only" in message
    assert "automation.task_push: must be one of conservative" in message


def _replace_line(text: str, key: str, new_line: str | None) -> str:
    """Replace the first ``key = ...`` line in the text (or delete it when None)."""
    pattern = re.compile(rf"^{re.escape(key)} = .*$", re.MULTILINE)
    assert pattern.search(text), key
    return pattern.sub("" if new_line is None else new_line, text, count=1)


# (exact line of FULL to replace, replacement or None to delete, key path, rule fragment)
FIELD_ERRORS = [
    ("config_version = 3", 'config_version = "3"', "config_version", "integer 3"),
    ("config_version = 3", None, "config_version", "is required"),
    (f'generation_id = "{GEN}"', 'generation_id = "nope"', "generation_id", "must be a UUID"),
    (f'generation_id = "{GEN}"', 'generation_id = "00000000-0000-0000-0000-000000000000"',
     "generation_id", "non-nil UUID"),
    (f'host_id = "{HOST}"', "host_id = 7", "host.host_id", "UUID string"),
    (f'host_id = "{HOST}"', None, "host.host_id", "is required"),
    ('display_name = "workstation"', f'display_name = "{"x" * 129}"', "host.display_name",
     "at most 128"),
    ('display_name = "workstation"', 'display_name = "a\\u001bb"', "host.display_name",
     "control"),
    ('display_name = "workstation"', 'display_name = "a\\u202eb"', "host.display_name",
     "U+202E (RLO)"),
    ('display_name = "workstation"', 'display_name = "  "', "host.display_name", "blank"),
    ('cli_default_mode = "navigator"', 'cli_default_mode = "tabs"', "views.cli_default_mode",
     "must be one of navigator, direct"),
    ('desktop_default_mode = "navigator"', "desktop_default_mode = 1",
     "views.desktop_default_mode", "must be one of navigator, direct"),
    ('task_push = "conservative"', 'task_push = "eager"', "automation.task_push",
     "must be one of conservative"),
    ('complete_return = "synthesize"', 'complete_return = "drop"',
     "automation.complete_return", "must be one of synthesize, handoff"),
    ("initial_max_depth = 1", "initial_max_depth = 0", "automation.initial_max_depth",
     "integer from 1 to 32"),
    ("initial_max_depth = 1", "initial_max_depth = 1.5", "automation.initial_max_depth",
     "integer from 1 to 32"),
    ('transport = "live_first"', 'transport = "live"', "control_turns.transport",
     "must be one of live_first, resume_only"),
    ("watchdog_timeout_seconds = 5", "watchdog_timeout_seconds = nan",
     "control_turns.watchdog_timeout_seconds", "from 0.5 to 120"),
    ("watchdog_timeout_seconds = 5", "watchdog_timeout_seconds = true",
     "control_turns.watchdog_timeout_seconds", "number of seconds"),
    ('command = ["claude", "--verbose"]', 'command = ["claude", 3]',
     "providers.claude.command[1]", "must be a string"),
    ('command = ["claude", "--verbose"]', "command = []", "providers.claude.command",
     "non-empty array"),
    ('command = ["claude", "--verbose"]', 'command = ["--x"]', "providers.claude.command[0]",
     "program"),
    ("enabled = true", 'enabled = "yes"', "providers.claude.enabled", "true or false"),
    ("version_timeout_seconds = 2.5", "version_timeout_seconds = 0",
     "providers.claude.version_timeout_seconds", "from 0.1 to 60"),
    ('socket_path = "/tmp/sb/tmux.sock"', 'socket_path = "relative.sock"', "tmux.socket_path",
     "absolute path"),
    ('socket_path = "/tmp/sb/tmux.sock"', f'socket_path = "/{"s" * 120}"', "tmux.socket_path",
     "at most 100 bytes"),
    ('view_session = "sb"', 'view_session = "a:b"', "tmux.view_session", "tmux session name"),
    ('holding_session = "_hold"', 'holding_session = "sb"', "tmux.holding_session",
     "must differ from tmux.view_session"),
    ("navigator_width = 44", "navigator_width = 5", "tmux.navigator_width", "from 16 to 200"),
    ('command = ["/usr/local/bin/switchboard", "hook"]', 'command = "switchboard hook"',
     "hooks.command", "array of strings"),
    ("[memory]\nenabled = true", "[memory]\nenabled = 0", "memory.enabled", "true or false"),
    (f'repository_id = "{REPO}"\nname', 'repository_id = "x"\nname',
     "repositories[0].repository_id", "UUID"),
    ('url = "git@github.com:example/switchboard.git"',
     'url = "https://me:hunter2@example.org/r.git"', "repositories[0].url", "password"),
    ('url = "git@github.com:example/switchboard.git"', 'url = "https://example.org/a b"',
     "repositories[0].url", "whitespace"),
    ('path = "/home/me/src/switchboard"', 'path = "src/switchboard"', "checkouts[0].path",
     "absolute path"),
    (f'project_id = "{PROJECT2}"', f'project_id = "{PROJECT}"', "projects[1].project_id",
     "duplicates"),
    ('name = "Docs"', 'name = "Switchboard"', "projects[1].name", "duplicates"),
    ('root = "/home/me/src/switchboard"', 'root = ""', "projects[0].root", "blank"),
    (f'checkout_id = "{CHECKOUT}"\nrepository_id', f'checkout_id = "{PROJECT}"\nrepository_id',
     "projects[0].checkout_id", "names checkout"),
    (f'checkout_id = "{CHECKOUT}"\nrepository_id', None, "checkouts[0].checkout_id",
     "is required"),
    ('preferred_provider = "codex"', 'preferred_provider = "mistral"',
     "projects[0].preferred_provider", "must be one of codex, claude, gemini, opencode"),
    ('complete_return = "handoff"', "complete_return = true", "projects[0].complete_return",
     "must be one of synthesize, handoff"),
    ('name = "build-box"', 'name = "-box"', "remotes[0].name", "starting with a letter"),
    ('ssh_target = "me@build.example.org"', 'ssh_target = "-oProxyCommand=x"',
     "remotes[0].ssh_target", "not starting with '-'"),
    (f'host_id = "{REMOTE_HOST}"', f'host_id = "{HOST}"', "remotes[0].host_id",
     "must differ from host.host_id"),
    (f'host_id = "{REMOTE_HOST}"', None, "remotes[0].host_id", "is required"),
    # A trailing newline must not slip past an anchored pattern ("$" matches before "\n").
    ('ssh_target = "me@build.example.org"', 'ssh_target = "me@build.example.org\\n"',
     "remotes[0].ssh_target", "ssh destination"),
    (f'host_id = "{HOST}"', f'host_id = "{HOST}\\n"', "host.host_id", "must be a UUID"),
    ('view_session = "sb"', 'view_session = "sb\\n"', "tmux.view_session", "session name"),
]


@pytest.mark.parametrize(("old", "new", "path", "fragment"), FIELD_ERRORS)
def test_each_field_error_names_its_key_path(
    old: str, new: str | None, path: str, fragment: str
) -> None:
    assert old in FULL, old
    if new is None:  # delete the key (keep any following line the match needed)
        new = old.split("\n", 1)[1] if "\n" in old else ""
    message = _error(FULL.replace(old, new, 1))
    assert f"{path}:" in message, message
    assert fragment in message, message


def test_reference_checks_name_the_referencing_key() -> None:
    missing_repo = FULL.replace(f'repository_id = "{REPO}"\npath',
                                f'repository_id = "{PROJECT}"\npath')
    assert "checkouts[0].repository_id: names repository" in _error(missing_repo)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (CONTRACT_EXAMPLE + "colour = 1\n", "colour"),
        (CONTRACT_EXAMPLE.replace("[views]", "[views]\nlayout = 'x'"), "views.layout"),
        (CONTRACT_EXAMPLE + "[tmux]\nsocket = '/x'\n", "tmux.socket"),
        (CONTRACT_EXAMPLE + "[providers.mistral]\n", "providers.mistral"),
        (CONTRACT_EXAMPLE + "[providers.claude]\nargs = []\n", "providers.claude.args"),
        (CONTRACT_EXAMPLE + "[memory]\nskills = true\n", "memory.skills"),
        (CONTRACT_EXAMPLE + "[[remotes]]\nname='a'\nhost_id='" + REMOTE_HOST
         + "'\nssh_target='a'\nport=22\n", "remotes[0].port"),
        (CONTRACT_EXAMPLE + "[host.extra]\n", "host.extra"),
    ],
)
def test_unknown_keys_are_errors_naming_the_key(text: str, path: str) -> None:
    message = _error(text)
    assert f"{path}:" in message
    assert "unknown" in message


@pytest.mark.parametrize(
    ("text", "path", "fragment"),
    [
        (CONTRACT_EXAMPLE.replace("[views]", "views = 1\n[views_x]"), "views", None),
        ("config_version = 3\ngeneration_id = '" + GEN + "'\n", "host", "is required"),
        ("projects = 3\n" + CONTRACT_EXAMPLE, "projects", "[[projects]]"),
        ("providers = 1\n" + CONTRACT_EXAMPLE, "providers", "must be a table"),
    ],
)
def test_structural_type_errors(text: str, path: str, fragment: str | None) -> None:
    message = _error(text)
    assert f"{path}:" in message
    if fragment:
        assert fragment in message


def test_missing_generation_allowed_only_for_templates() -> None:
    text = _replace_line(CONTRACT_EXAMPLE, "generation_id", None)
    assert "generation_id: is required" in _error(text)
    assert parse_config(text, allow_missing_generation=True).generation_id == ""
    # A present-but-bad id is still an error in a template.
    bad = CONTRACT_EXAMPLE.replace(GEN, "x")
    assert "generation_id:" in _error(bad, allow_missing_generation=True)


# --------------------------------------------------------------------------- property


def _safe_text(max_size: int) -> st.SearchStrategy[str]:
    alphabet = st.characters(
        blacklist_categories=("Cs", "Cc", "Zl", "Zp"),
        blacklist_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    )
    return st.text(alphabet=alphabet, min_size=1, max_size=max_size).filter(
        lambda s: s.strip() != "" and UNSAFE_CHARS.search(s) is None)


_uuids = st.uuids().filter(lambda u: u.int != 0).map(str)
_abs_paths = _safe_text(40).map(lambda s: "/" + s)
def _program(item: str) -> str:
    name = item.lstrip("-")
    return name if name.strip() else "prog"


_argv = st.lists(_safe_text(20), min_size=1, max_size=4).map(
    lambda items: (_program(items[0]), *items[1:]))
_seconds = st.floats(min_value=0.5, max_value=120.0, allow_nan=False)


@st.composite
def configs(draw: st.DrawFn) -> Config:
    repositories = draw(st.lists(
        st.builds(RepositoryConfig, repository_id=_uuids, name=_safe_text(30),
                  url=st.none() | st.from_regex(r"\Ahttps://[a-z]{1,10}\.org/[a-z]{1,10}\Z")),
        max_size=3, unique_by=lambda r: r.repository_id,
    ))
    repo_ids = [r.repository_id for r in repositories]
    checkouts = draw(st.lists(
        st.builds(CheckoutConfig, checkout_id=_uuids, path=_abs_paths,
                  repository_id=st.sampled_from([None, *repo_ids])),
        max_size=3, unique_by=(lambda c: c.checkout_id, lambda c: c.path),
    ))
    projects: list[ProjectConfig] = []
    if checkouts:
        projects = draw(st.lists(
            st.builds(ProjectConfig, project_id=_uuids, name=_safe_text(30), root=_abs_paths,
                      checkout_id=st.sampled_from([c.checkout_id for c in checkouts]),
                      complete_return=st.none() | st.sampled_from(CompleteReturnPolicy),
                      preferred_provider=st.none() | st.sampled_from(Provider)),
            max_size=3, unique_by=(lambda p: p.project_id, lambda p: p.name),
        ))
    host_id = draw(_uuids)
    remotes = draw(st.lists(
        st.builds(RemoteConfig, name=st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,10}\Z"),
                  host_id=_uuids.filter(lambda h: h != host_id),
                  ssh_target=st.from_regex(r"\A[a-z][a-z0-9]{0,8}@[a-z]{1,8}\.example\Z")),
        max_size=2, unique_by=(lambda r: r.name, lambda r: r.host_id),
    ))
    sessions = draw(st.lists(st.from_regex(r"\A[A-Za-z0-9_-]{1,12}\Z"), min_size=2,
                             max_size=2, unique=True))
    return Config(
        config_version=3,
        generation_id=draw(_uuids),
        host=HostConfig(host_id=host_id, display_name=draw(_safe_text(128))),
        views=ViewsConfig(draw(st.sampled_from(ViewMode)), draw(st.sampled_from(ViewMode))),
        automation=AutomationConfig(
            complete_return=draw(st.sampled_from(CompleteReturnPolicy)),
            initial_max_depth=draw(st.integers(1, 32)),
        ),
        control_turns=ControlTurnsConfig(draw(st.sampled_from(TransportPolicy)),
                                         draw(_seconds)),
        providers={
            provider: ProviderConfig(draw(_argv), draw(st.booleans()),
                                     draw(st.floats(min_value=0.1, max_value=60.0)))
            for provider in Provider
        },
        projects=tuple(projects),
        repositories=tuple(repositories),
        checkouts=tuple(checkouts),
        tmux=TmuxConfig(
            socket_path=draw(st.none() | st.from_regex(r"\A/tmp/[a-z]{1,20}\.sock\Z")),
            view_session=sessions[0], holding_session=sessions[1],
            navigator_width=draw(st.integers(16, 200)),
        ),
        hooks=HooksConfig(draw(_argv)),
        remotes=tuple(remotes),
        memory=MemoryConfig(draw(st.booleans())),
    )


@settings(max_examples=80, deadline=None)
@given(configs())
def test_render_parse_round_trip(config: Config) -> None:
    text = render_config(config)
    tomllib.loads(text)  # valid TOML on its own
    assert parse_config(text) == config
    assert render_config(parse_config(text)) == text


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_display_names_either_round_trip_or_name_the_field(name: str) -> None:
    try:
        config = default_config(generation_id=GEN, host_id=HOST, display_name=name)
    except ConfigError as exc:
        assert "host.display_name" in exc.message
    else:
        assert config.host.display_name == name
        assert parse_config(render_config(config)) == config
