"""The fake agents' streamable HTTP MCP client: what the real CLIs send and refuse."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from core.providers import agent_http
from core.providers.fake.mcp import HttpMcpClient, HttpRefused, HttpServer, parse_overrides
from core.server.main import stop_server


@pytest.fixture
def server(sb_home: Path) -> Iterator[tuple[agent_http.ServerInfo, str]]:
    home = Home.from_env()
    info = agent_http.ensure_server(home.run_dir, home.child_env())
    session = home.run_dir / "s"
    session.mkdir(mode=0o700)
    yield info, agent_http.register_token(home.run_dir, session, {})
    with contextlib.suppress(Exception):
        stop_server(home.run_dir)


def _codex(url: str, env: dict[str, str]) -> HttpServer | str | None:
    overrides = parse_overrides([f'mcp_servers.switchboard.url="{url}"',
                                 'mcp_servers.switchboard.bearer_token_env_var='
                                 '"SWITCHBOARD_MCP_TOKEN"'])
    return HttpServer.from_codex_config(overrides, "switchboard", env)


def test_codex_sends_the_token_its_variable_names(server) -> None:
    info, token = server
    remote = _codex(info.url, {"SWITCHBOARD_MCP_TOKEN": token})
    assert isinstance(remote, HttpServer)
    code, stdout, stderr = HttpMcpClient(remote).call("transition_claim", {})
    # The call ran (in a child with this token's empty environment): the tool's own refusal.
    assert (code, stdout) == (1, "") and "no Switchboard capability" in stderr


def test_codex_without_the_variable_leaves_the_server_out(server) -> None:
    info, _ = server
    reason = _codex(info.url, {})
    assert reason == ("MCP client for `switchboard` failed to start: Environment variable "
                      "SWITCHBOARD_MCP_TOKEN for MCP server 'switchboard' is not set")
    assert HttpMcpClient(reason).call("transition_claim", {}) == (1, "", reason)


def test_a_forged_token_is_refused_with_the_servers_line(server) -> None:
    info, _ = server
    remote = _codex(info.url, {"SWITCHBOARD_MCP_TOKEN": secrets.token_urlsafe(32)})
    assert isinstance(remote, HttpServer)
    code, _, stderr = HttpMcpClient(remote).call("transition_claim", {})
    assert code == 1 and stderr == ("MCP server refused the request: HTTP 401: unknown "
                                    "token: not issued by this Switchboard server")


def test_claude_lists_with_its_headers_and_without_them_is_refused(server) -> None:
    info, token = server
    spec = {"type": "http", "url": info.url, "headers": {"Authorization": f"Bearer {token}"}}
    remote = HttpServer.from_claude_spec(spec)
    assert remote is not None and "transition_claim" in remote.list_tools()
    bare = HttpServer.from_claude_spec({"type": "http", "url": info.url})
    assert bare is not None
    with pytest.raises(HttpRefused) as refused:
        bare.list_tools()
    assert refused.value.status == 401
    assert HttpServer.from_claude_spec({"command": "x"}) is None  # a stdio server
