"""The fake agent reads argv as Claude Code (commander.js) and Codex (clap) do.

Each expectation here was observed on the pinned binaries (Claude Code
2.1.197, Codex 0.171.0); ``tests/realcli/test_argv_shapes.py`` runs both
side by side. These are the parser's own cases, in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.providers.fake.agent import parse_args
from core.providers.fake.argv import ArgvError, parse

SID = "11111111-1111-4111-8111-111111111111"
TID = "019a0000-0000-7000-8000-000000000001"


@pytest.fixture
def mcp_file(tmp_path: Path) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    return str(path)


def claude(*argv: str):
    return parse(["--provider", "claude", *argv])


def codex(*argv: str):
    return parse(["--provider", "codex", *argv])


def refused(*argv: str) -> tuple[int, str]:
    with pytest.raises(ArgvError) as caught:
        parse(list(argv))
    return caught.value.exit_code, caught.value.message.splitlines()[0]


# --- commander (Claude Code) --------------------------------------------------


def test_a_variadic_option_swallows_the_prompt_until_the_next_option(mcp_file: str) -> None:
    assert claude("--allowedTools", "Bash", "Edit", "hello").prompt is None
    assert claude("--allowedTools", "Bash", "Edit", "hello").get("allowed_tools") == \
        ["Bash", "Edit", "hello"]
    assert claude("--allowedTools", "Bash", "--strict-mcp-config", "hello").prompt == "hello"
    # the fake's own options end the list like any option
    assert claude("--mcp-config", mcp_file, "--hook-command", "true", "hi").prompt == "hi"


def test_the_swallowed_prompt_is_read_as_a_missing_mcp_config(mcp_file: str,
                                                              monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgvError) as caught:
        claude("--mcp-config", mcp_file, "some prompt")
    assert caught.value.exit_code == 1
    assert caught.value.message == ("Error: Invalid MCP configuration:\n"
                                    f"MCP config file not found: {tmp_path / 'some prompt'}")


def test_equals_form_and_double_dash_keep_the_prompt(mcp_file: str) -> None:
    assert claude(f"--mcp-config={mcp_file}", "hello").prompt == "hello"
    assert claude("--mcp-config", mcp_file, "--", "hello").prompt == "hello"
    assert claude("--allowedTools=Bash", "hello").get("allowed_tools") == ["Bash"]
    assert claude("--", "--not-an-option").prompt == "--not-an-option"


def test_inline_json_mcp_config_and_bad_files(tmp_path: Path) -> None:
    assert claude("--mcp-config", '{"mcpServers": {}}', "--", "hi").prompt == "hi"
    bad = tmp_path / "bad.json"
    bad.write_text("{bad", encoding="utf-8")
    with pytest.raises(ArgvError) as caught:
        claude(f"--mcp-config={bad}")
    assert caught.value.message.splitlines()[1] == "MCP config is not a valid JSON"


def test_unknown_options_fail_with_commanders_message() -> None:
    assert refused("--provider", "claude", "--bogus") == (1, "error: unknown option '--bogus'")
    assert refused("--provider", "claude", "hello", "--bogus") == \
        (1, "error: unknown option '--bogus'")
    assert refused("--provider", "claude", "-fix", "this") == (1, "error: unknown option '-fix'")
    with pytest.raises(ArgvError) as caught:
        claude("--sesion-id", SID)
    assert caught.value.message.splitlines()[1] == "(Did you mean --session-id?)"


def test_values_optional_values_and_short_clusters() -> None:
    assert refused("--provider", "claude", "--session-id") == \
        (1, "error: option '--session-id <uuid>' argument missing")
    assert refused("--provider", "claude", "--name") == \
        (1, "error: option '-n, --name <name>' argument missing")
    assert claude("-d", "api", "hello").get("debug") == "api"
    assert claude("--debug", "hello").prompt is None  # [filter] took the word
    assert claude("--debug", "--", "hello").prompt == "hello"
    parsed = claude("-pnfoo", "hello")
    assert (parsed.get("print"), parsed.get("name"), parsed.prompt) == (True, "foo", "hello")
    assert refused("--provider", "claude", "-pc", "hello")[1].startswith(
        "fake_agent: --continue is not emulated")
    assert claude("-nfoo", "hello").get("name") == "foo"
    assert claude("hello", "extra").prompt == "hello"  # extra operands are ignored


def test_choices_session_and_resume_checks() -> None:
    assert refused("--provider", "claude", "--permission-mode", "bogus")[1].startswith(
        "error: option '--permission-mode <mode>' argument 'bogus' is invalid. Allowed choices"
        " are acceptEdits, auto")
    assert claude("--permission-mode=plan", "hi").get("permission_mode") == "plan"
    assert refused("--provider", "claude", "--session-id", "nope") == \
        (1, "Error: Invalid session ID. Must be a valid UUID.")
    assert refused("--provider", "claude", "--session-id", SID, "--resume", SID)[1].startswith(
        "Error: --session-id can only be used with --continue or --resume")
    assert claude("--resume", SID, "hello").get("resume") == SID
    assert claude(f"--resume={SID}", "--", "hello").prompt == "hello"
    code, line = refused("--provider", "claude", "--resume", "hello")
    assert code == 1 and line.startswith("Error: --resume requires a valid session ID")
    assert refused("--provider", "claude", "--resume")[0] == 1


def test_settings_file_or_json(tmp_path: Path) -> None:
    assert refused("--provider", "claude", "--settings", str(tmp_path / "nope.json"), "hi") == \
        (1, f"Error: Settings file not found: {tmp_path / 'nope.json'}")
    assert claude("--settings", '{"hooks": {}}', "hi").prompt == "hi"


def test_a_subcommand_name_is_not_a_prompt() -> None:
    code, line = refused("--provider", "claude", "doctor")
    assert code == 2 and "subcommand the fake does not emulate" in line


# --- clap (Codex) ---------------------------------------------------------------


def test_codex_prompt_resume_and_global_options_after_the_subcommand() -> None:
    assert codex("hello").prompt == "hello"
    for argv in (("-c", "a=1", "resume", TID, "hi"), ("resume", "-c", "a=1", TID, "hi"),
                 ("resume", TID, "-c", "a=1", "hi"), ("resume", TID, "hi", "-c", "a=1"),
                 ("--config=a=1", "resume", TID, "hi"), ("-ca=1", "resume", TID, "hi")):
        parsed = codex(*argv)
        assert (parsed.resume, parsed.session_id, parsed.prompt, parsed.list_of("config")) == \
            (True, TID, "hi", ["a=1"]), argv
    assert codex("-c", "a=1", "-c", "b=2", "hi").list_of("config") == ["a=1", "b=2"]
    assert codex("--", "--weird").prompt == "--weird"


def test_codex_refusals() -> None:
    assert refused("--provider", "codex", "--bogus", "hi") == \
        (2, "error: unexpected argument '--bogus' found")
    assert refused("--provider", "codex", "hello", "extra") == \
        (2, "error: unrecognized subcommand 'extra'")
    assert refused("--provider", "codex", "resume", TID, "hi", "extra") == \
        (2, "error: unexpected argument 'extra' found")
    assert refused("--provider", "codex", "--last", "hi") == \
        (2, "error: unexpected argument '--last' found")
    assert refused("--provider", "codex", "-c") == \
        (2, "error: a value is required for '--config <key=value>' but none was supplied")
    assert refused("--provider", "codex", "--oss", "--oss") == \
        (2, "error: the argument '--oss' cannot be used multiple times")
    assert refused("--provider", "codex", "-m", "a", "-m", "b") == \
        (2, "error: the argument '--model <MODEL>' cannot be used multiple times")
    assert refused("--provider", "codex", "-c", "noequals", "hi") == \
        (1, "Error parsing -c overrides: Invalid override (missing '='): noequals")
    assert refused("--provider", "codex", "-c", "=1", "hi") == \
        (1, "Error parsing -c overrides: Empty key in override: =1")


def test_codex_emulation_limits_are_named() -> None:
    """The real CLI opens a picker here; the fake has none and says so (exit 1)."""
    for argv in (("resume",), ("resume", "--last"), ("resume", "my-session-name")):
        code, line = refused("--provider", "codex", *argv)
        assert code == 1 and line.startswith("fake_agent:") and "not emulated" in line


def test_launch_reads_hooks_and_mcp_from_codex_overrides() -> None:
    launch = parse_args(["--provider", "codex", "-c",
                         'hooks.Stop=[{hooks = [{type = "command", command = "x", '
                         'timeout = 30}]}]', "-c", 'mcp_servers.switchboard.command="sb"',
                         "resume", TID, "hi"])
    assert launch.resume == TID and launch.prompt == "hi"
    assert launch.overrides["hooks"]["Stop"][0]["hooks"][0]["command"] == "x"
    assert launch.overrides["mcp_servers"]["switchboard"]["command"] == "sb"


def test_version_and_help_need_no_other_checks() -> None:
    assert parse_args(["--provider", "claude", "--version"]).show_version
    assert parse_args(["--provider", "codex", "-V"]).show_version
    assert parse_args(["--provider", "claude", "-h"]).show_help
