"""``i``'s counts line: running subagents, and what a Codex session cannot report."""

from __future__ import annotations

from core.evidence.store import EvidenceCounts, SessionDetail
from core.model.enums import Provider
from navigator.screens.session_detail import CODEX_SUBAGENTS, summary_line


def _detail(provider: Provider, subagents: int) -> SessionDetail:
    return SessionDetail(session_key="k", recorded=True, path="/x/sessions/k/session.db",
                         provider=provider.value,
                         counts=EvidenceCounts(events=3, tool_runs=1, ok=1, subagents=subagents))


def test_running_subagents_are_counted_for_both_providers() -> None:
    for provider in (Provider.CLAUDE, Provider.CODEX):
        assert summary_line(_detail(provider, 2)).endswith(" · 2 subagents running")
        assert summary_line(_detail(provider, 1)).endswith(" · 1 subagent running")


def test_a_codex_session_says_its_cli_does_not_report_subagents() -> None:
    line = summary_line(_detail(Provider.CODEX, 0))
    assert line == "3 events · 0 commands (0 failed) · 1 tool runs (0 error)" + CODEX_SUBAGENTS
    assert "Codex does not report" in line
    assert summary_line(_detail(Provider.CLAUDE, 0)) == (
        "3 events · 0 commands (0 failed) · 1 tool runs (0 error)")
