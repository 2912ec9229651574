"""``i``'s counts line: running subagents, for both providers (Claude Code and Codex
0.171.0 both send SubagentStart/SubagentStop)."""

from __future__ import annotations

from core.evidence.store import EvidenceCounts, SessionDetail
from core.model.enums import Provider
from navigator.screens.session_detail import summary_line

BASE = "3 events · 0 commands (0 failed) · 1 tool runs (0 error)"


def _detail(provider: Provider, subagents: int) -> SessionDetail:
    return SessionDetail(session_key="k", recorded=True, path="/x/sessions/k/session.db",
                         provider=provider.value,
                         counts=EvidenceCounts(events=3, tool_runs=1, ok=1, subagents=subagents))


def test_running_subagents_are_counted_for_both_providers() -> None:
    for provider in (Provider.CLAUDE, Provider.CODEX):
        assert summary_line(_detail(provider, 2)) == BASE + " · 2 subagents running"
        assert summary_line(_detail(provider, 1)) == BASE + " · 1 subagent running"
        assert summary_line(_detail(provider, 0)) == BASE
