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
