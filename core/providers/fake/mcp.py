"""The fake Codex's MCP client: starts configured stdio servers the way Codex does.

Codex reads ``mcp_servers.NAME.{command,args,env_vars}`` from its config and
``-c`` overrides (dotted key = TOML value), and starts each server with a
cleared environment: a short default list plus the names in ``env_vars``.
The fake follows the same rules, so a test run through it proves that a
launch's overrides are enough for the agent tools to authenticate.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from dataclasses import dataclass
from typing import Any

CODEX_DEFAULT_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM",
                     "TMPDIR", "TZ")
"""What Codex passes to every stdio MCP server without being asked."""

PROTOCOL_VERSION = "2025-06-18"
CALL_TIMEOUT_S = 60.0


class OverrideError(ValueError):
    """A ``-c`` value that is not ``dotted.key=VALUE``."""


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``-c`` pairs into one nested table; a value that is not TOML is a string."""
    table: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        parts = [part for part in key.strip().split(".") if part]
        if not sep:
            raise OverrideError(f"Invalid override (missing '='): {pair}")
        if not parts:
            raise OverrideError(f"Empty key in override: {pair}")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # as Codex: an unparsable value is taken literally
        node = table
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise OverrideError(f"-c {key}: {part} is not a table")
        node[parts[-1]] = value
    return table


@dataclass(frozen=True)
class StdioServer:
    command: str
    args: tuple[str, ...]
    env_vars: tuple[str, ...]

    @classmethod
    def from_config(cls, config: dict[str, Any], name: str) -> StdioServer | None:
        entry = config.get("mcp_servers", {}).get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            return None
        return cls(entry["command"], tuple(entry.get("args", ())),
                   tuple(entry.get("env_vars", ())))

    def environment(self, parent: dict[str, str]) -> dict[str, str]:
        names = (*CODEX_DEFAULT_ENV, *self.env_vars)
        return {name: parent[name] for name in names if name in parent}


class McpClient:
    """One server process per tool call: simple, and like a fresh Codex session."""

    def __init__(self, server: StdioServer, parent_env: dict[str, str]) -> None:
        self.server = server
        self.env = server.environment(parent_env)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) shaped like the CLI agent tool's answer."""
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "fake-codex", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": tool, "arguments": arguments}},
        ]
        body = "".join(json.dumps(m) + "\n" for m in messages)
        try:
            done = subprocess.run([self.server.command, *self.server.args], input=body.encode(),
                                  capture_output=True, env=self.env, cwd=os.getcwd(),
                                  timeout=CALL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return -1, "", f"MCP server did not answer: {exc}"
        stderr = done.stderr.decode("utf-8", "replace")
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if reply.get("id") != 2:
                continue
            if "error" in reply:
                return 1, "", f"mcp error: {reply['error'].get('message')}"
            result = reply.get("result", {})
            text = "".join(c.get("text", "") for c in result.get("content", ()))
            return (1, "", text) if result.get("isError") else (0, text, stderr)
        return 1, "", f"MCP server gave no answer (exit {done.returncode}): {stderr[-300:]}"


HTTP_TIMEOUT_S = 10.0
"""Connecting and each request's answer, except a call's (``CALL_TIMEOUT_S``)."""


class HttpRefused(Exception):
    """The server answered with an HTTP error status (its one line of text kept)."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(f"HTTP {status}: {line}")
        self.status = status


@dataclass(frozen=True)
class HttpServer:
    """A streamable HTTP MCP server as a client is told of it: the URL and the headers
    it sends on every request (Claude: ``headers``; Codex: ``Authorization: Bearer`` from
    the variable ``bearer_token_env_var`` names, plus ``http_headers``)."""

    url: str
    headers: tuple[tuple[str, str], ...]

    @classmethod
    def from_codex_config(cls, config: dict[str, Any], name: str,
                          env: dict[str, str]) -> HttpServer | str | None:
        """The server, None when ``name`` is not an HTTP server, or (a string) why Codex
        leaves it out: a ``bearer_token_env_var`` naming an unset variable is an error
        Codex reports at start-up, and that server's tools are missing."""
        entry = config.get("mcp_servers", {}).get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            return None
        headers = [(str(k), str(v)) for k, v in (entry.get("http_headers") or {}).items()]
        variable = entry.get("bearer_token_env_var")
        if isinstance(variable, str):
            token = env.get(variable)
            if not token:
                return (f"MCP client for `{name}` failed to start: Environment variable "
                        f"{variable} for MCP server '{name}' is not set")
            headers.append(("Authorization", f"Bearer {token}"))
        return cls(entry["url"], tuple(headers))

    @classmethod
    def from_claude_spec(cls, spec: dict[str, Any]) -> HttpServer | None:
        """``{"type": "http", "url": ..., "headers": {...}}`` from ``--mcp-config``."""
        if spec.get("type") != "http" or not isinstance(spec.get("url"), str):
            return None
        raw = spec.get("headers")
        headers = raw if isinstance(raw, dict) else {}
        return cls(spec["url"], tuple((str(k), str(v)) for k, v in headers.items()))

    def post(self, message: dict[str, Any], timeout: float = HTTP_TIMEOUT_S,
             protocol: str | None = None) -> dict[str, Any] | None:
        """One JSON-RPC message as a streamable HTTP client sends it; the answer (JSON or
        one SSE event), None for an accepted notification. Raises HttpRefused, OSError."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self.url, data=json.dumps(message).encode(),
                                         method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        if protocol is not None:
            request.add_header("MCP-Protocol-Version", protocol)
        for name, value in self.headers:
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                kind = response.headers.get("Content-Type", "")
                body = response.read(8 * 1024 * 1024)
                status = response.status
        except urllib.error.HTTPError as exc:
            line = exc.read(4096).decode("utf-8", "replace").strip().splitlines()
            raise HttpRefused(exc.code, line[0] if line else exc.reason) from None
        if status == 202 or not body:
            return None
        text = body.decode("utf-8", "replace")
        if kind.startswith("text/event-stream"):
            data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
            text = data[-1] if data else "null"
        answer = json.loads(text)
        return answer if isinstance(answer, dict) else None

    def list_tools(self) -> list[str]:
        """What a CLI does at start-up: initialize, initialized, tools/list (names)."""
        self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "fake-claude", "version": "0"}}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                  protocol=PROTOCOL_VERSION)
        listed = self.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                           protocol=PROTOCOL_VERSION) or {}
        tools = listed.get("result", {}).get("tools", [])
        return [tool.get("name", "") for tool in tools if isinstance(tool, dict)]


class HttpMcpClient:
    """The fake Codex's client of a streamable HTTP server: a fresh session per call."""

    def __init__(self, server: HttpServer | str) -> None:
        self.server = server

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) shaped like the CLI agent tool's answer."""
        if isinstance(self.server, str):
            return 1, "", self.server  # left out at start-up: Codex has no such tool
        try:
            self.server.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "fake-codex", "version": "0"}}})
            self.server.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                             protocol=PROTOCOL_VERSION)
            reply = self.server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": tool, "arguments": arguments}},
                                     timeout=CALL_TIMEOUT_S, protocol=PROTOCOL_VERSION)
        except HttpRefused as exc:
            return 1, "", f"MCP server refused the request: {exc}"
        except (OSError, ValueError) as exc:
            return -1, "", f"MCP server did not answer: {exc}"
        if not reply:
            return 1, "", "MCP server gave no answer"
        if "error" in reply:
            return 1, "", f"mcp error: {reply['error'].get('message')}"
        result = reply.get("result", {})
        text = "".join(c.get("text", "") for c in result.get("content", ()))
        return (1, "", text) if result.get("isError") else (0, text, "")
