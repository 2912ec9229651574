"""The CLI front end, in-process against a real registry: thin calls into the engine."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig, render_config
from core.model.enums import Provider
from navigator.cli import main
from tests.factories import project_config
from tests.integration.journey_env import fake_provider_command


@pytest.fixture
def cli(sb_home: Path, tmux_socket: Path, capsys: pytest.CaptureFixture[str]):
    # CLI mutations drive tmux: a private server and the fake provider stand in.
    template = replace(project_config(sb_home / "src"), generation_id="",
                       tmux=TmuxConfig(socket_path=str(tmux_socket)),
                       providers={p: ProviderConfig(command=fake_provider_command(p.value))
                                  for p in Provider})
    (sb_home / "config.toml").write_text(render_config(template), encoding="utf-8")

    def run(*args: str, expect: int = 0):
        code = main(list(args))
        out = capsys.readouterr()
        assert code == expect, out.err
        if "--json" in args and code == 0:
            return json.loads(out.out)
        return out.out + out.err

    assert "initialized generation" in run("init")
    return run


def test_frame_journey_through_the_cli(cli) -> None:
    route = cli("project", "enter", "alpha", "--json")
    push = cli("frame", "push", route["frame_id"], "--title", "Fix it", "--brief",
               "the brief", "--json")
    assert push["state"] == "awaiting_claim"  # the child launched; its claim is next
    frames = cli("frame", "list", "--project", "alpha", "--json")
    assert [(f["role"], f["title"]) for f in frames] == [("workspace", "alpha"),
                                                         ("task", "Fix it")]
    views = cli("view", "list", "--json")
    assert views[0]["pending_transition"] == "push:awaiting_claim"
    text = cli("frame", "back", route["view_id"], expect=2)
    assert "transition_in_flight" in text and "awaiting_claim" in text  # one per view


def test_views_mode_retire_and_requests(cli) -> None:
    route = cli("project", "enter", "alpha", "--json")
    rid = "bbbbbbbb-0000-4000-8000-000000000001"
    direct = cli("view", "mode", route["view_id"], "direct", "--request-id", rid, "--json")
    assert direct["mode"] == "direct"
    again = cli("view", "mode", route["view_id"], "direct", "--request-id", rid, "--json")
    assert again == direct  # idempotent retry
    conflict = cli("view", "mode", route["view_id"], "navigator", "--request-id", rid,
                   expect=2)
    assert "request_conflict" in conflict
    assert "must be a UUID" in cli("view", "mode", route["view_id"], "--request-id", "nope",
                                   expect=2)
    cli("view", "retire", route["view_id"], "--json")
    assert "view_not_live" in cli("view", "mode", route["view_id"], expect=2)


def test_contexts_block_and_explicit_resolution(cli) -> None:
    route = cli("project", "enter", "alpha", "--json")
    (context,) = cli("context", "list", "--json")
    assert (context["claim_state"], context["project"]) == ("released", "alpha")
    rid = "cccccccc-0000-4000-8000-000000000001"
    cli("context", "block", context["work_context_id"], "--request-id", rid, "--json")
    assert cli("context", "list", "--json")[0]["claim_state"] == "blocked"
    cli("context", "block", context["work_context_id"], "--request-id", rid, "--json")
    assert "request_conflict" in cli("context", "release", context["work_context_id"],
                                     "--request-id", rid, expect=2)  # same id, other act
    assert "--foreground" in cli("context", "resolve", context["work_context_id"], "--to",
                                 "held", expect=2)
    cli("context", "resolve", context["work_context_id"], "--to", "held", "--foreground",
        route["frame_id"], "--json")
    held = cli("context", "list", "--json")[0]
    assert (held["claim_state"], held["foreground_frame_id"]) == ("held", route["frame_id"])
    cli("context", "release", context["work_context_id"], "--json")
    assert cli("context", "list", "--json")[0]["claim_state"] == "released"


def test_state_envelopes_and_errors(cli, sb_home: Path) -> None:
    cli("project", "enter", "beta", "--json")
    host = cli("state", "host", "--json")
    assert host["hostStateVersion"] == 1 and len(host["frames"]) == 1
    nav = cli("state", "navigator", "--json")
    assert [p["name"] for p in nav["projects"]] == ["alpha", "beta"]
    assert "unknown project 'gamma'" in cli("project", "enter", "gamma", expect=2)
    assert "already initialized" in cli("init", expect=2)
    assert "does not match the current generation" in cli(
        "reset", "--confirm-generation", "00000000-0000-4000-8000-000000000999", expect=2)
    assert cli("recovery", "list").strip() == "no open recoveries"


@pytest.mark.parametrize(("env_tmux", "flags", "expected"), [
    ("/tmp/tmux-0/default,4242,0", (), "/tmp/tmux-0/default"),  # run inside tmux: that one
    ("/tmp/tmux-0/default,4242,0", ("--private-tmux",), None),
    (None, ("--tmux-socket", "rel/sock"), "{cwd}/rel/sock"),
    (None, (), None),  # outside tmux: the private default
])
def test_init_chooses_the_tmux_server_views_open_on(
        sb_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        env_tmux: str | None, flags: tuple[str, ...], expected: str | None) -> None:
    import tomllib

    if env_tmux is not None:
        monkeypatch.setenv("TMUX", env_tmux)
    monkeypatch.chdir(sb_home)
    assert main(["init", *flags]) == 0, capsys.readouterr().err
    config = tomllib.loads((sb_home / "config.toml").read_text(encoding="utf-8"))
    wanted = expected.format(cwd=sb_home) if expected else None
    assert config.get("tmux", {}).get("socket_path") == wanted


def test_init_keeps_the_socket_a_config_template_names(
        sb_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    template = replace(project_config(sb_home / "src"), generation_id="",
                       tmux=TmuxConfig(socket_path="/srv/agents.sock"))
    (sb_home / "config.toml").write_text(render_config(template), encoding="utf-8")
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,4242,0")
    assert main(["init"]) == 0
    config = tomllib.loads((sb_home / "config.toml").read_text(encoding="utf-8"))
    assert config["tmux"]["socket_path"] == "/srv/agents.sock"


def test_recovery_dismiss_and_resolve_are_retry_safe(cli, sb_home: Path) -> None:
    from core.engine.open import open_engine
    from core.model.enums import Actionability, RecoveryKind
    from storage.connection import write_transaction
    from storage.operations import recoveries as recoveries_ops

    route = cli("project", "enter", "alpha", "--json")
    engine = open_engine()
    with write_transaction(engine.conn) as tx:
        ids = [recoveries_ops.open_recovery(
            tx, recovery_id=f"dddddddd-0000-4000-8000-00000000000{n}", host_id=engine.host_id,
            kind=kind, subject_type="view", subject_id=route["view_id"],
            actionability=Actionability.MANUAL, explanation="look at it", now=engine.now())
            for n, kind in ((1, RecoveryKind.PLACEMENT_ORPHANED),
                            (2, RecoveryKind.SERVER_RESTARTED))]
    engine.conn.close()
    rid = "eeeeeeee-0000-4000-8000-000000000001"
    first = cli("recovery", "dismiss", ids[0], "--request-id", rid, "--json")
    again = cli("recovery", "dismiss", ids[0], "--request-id", rid, "--json")
    assert first["state"] == again["state"] == "dismissed"  # the retry changes nothing
    assert "recovery_closed" in cli("recovery", "resolve", ids[0], expect=2)
    assert cli("recovery", "resolve", ids[1], "--json")["state"] == "resolved"
    assert cli("recovery", "resolve", ids[1], "--json")["state"] == "resolved"
    assert "must be a UUID" in cli("recovery", "run", ids[1], "--request-id", "x", expect=2)
