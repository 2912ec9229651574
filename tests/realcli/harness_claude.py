"""The real Claude Code CLI in an isolated HOME, talking only to the loopback stand-in.

What the pinned CLI (2.1.197) needs so that nothing blocks a pane or leaves the
machine, found by running it in a tmux pane and reading the screen:

* ``~/.claude.json`` with ``hasCompletedOnboarding`` (else it runs a network
  preflight against api.anthropic.com and stops with "Unable to connect"), a
  ``theme`` (else the theme picker), ``customApiKeyResponses.approved`` holding
  the last 20 characters of the key (else "Detected a custom API key"), and
  ``projects[<root>].hasTrustDialogAccepted`` (else the folder-trust dialog);
* ``ANTHROPIC_BASE_URL`` (the stand-in) and a dummy ``ANTHROPIC_API_KEY``;
* ``DISABLE_AUTOUPDATER``, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``,
  ``DISABLE_TELEMETRY`` and ``DISABLE_ERROR_REPORTING`` so no other host is tried;
* ``permissions.defaultMode = "default"`` in the person's settings, so a Bash
  command asks (the person's own rule; Switchboard's launch settings add only
  its three tools).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

DUMMY_KEY = "sk-ant-api03-standin-" + "0" * 40
QUIET_ENV = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
FOREIGN_ENV = ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
               "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "HTTPS_PROXY",
               "HTTP_PROXY", "ALL_PROXY", "MCP_CONNECTION_NONBLOCKING")


def seed_home(home: Path, trusted: Sequence[Path], version: str, *,
              nudge_seen: bool = True) -> Path:
    """An isolated HOME in which Claude Code opens straight to its prompt, or, with
    ``nudge_seen=False`` on 2.1.300+, first to its one-time start-up dialog "Make auto
    mode your default permission mode?" (the person's settings name a mode of their
    own, as many people's do)."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": version,
        "theme": "dark",
        "hasSeenAutoDefaultNudge": nudge_seen,
        "customApiKeyResponses": {"approved": [DUMMY_KEY[-20:]], "rejected": []},
        "projects": {str(path): {"hasTrustDialogAccepted": True,
                                 "hasCompletedProjectOnboarding": True, "allowedTools": []}
                     for path in trusted},
    }
    (home / ".claude.json").write_text(json.dumps(state, indent=2) + "\n")
    settings = {"permissions": {"defaultMode": "default"}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    return home


LOCAL_CHECK_ENV = {"CLAUDE_CODE_AUTO_MODE_SERVER": "0"}
"""Auto mode without the service's own check (2.1.332): the CLI asks about each command
in a side request instead, which the stand-in answers (``classifier_verdict``)."""


def claude_command(binary: Path, home: Path, base_url: str,
                   extra_env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The provider command: ``env`` sets the isolated world, then the real binary."""
    unset = [part for name in FOREIGN_ENV for part in ("-u", name)]
    assigns = [f"{k}={v}" for k, v in {"HOME": str(home), "ANTHROPIC_BASE_URL": base_url,
                                       "ANTHROPIC_API_KEY": DUMMY_KEY, **QUIET_ENV,
                                       **(extra_env or {})}.items()]
    return ("env", *unset, *assigns, str(binary))


def transcript(home: Path, session_id: str) -> Path | None:
    """The CLI's own file of one session: ``~/.claude/projects/<cwd>/<id>.jsonl``."""
    found = list((home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    return found[0] if len(found) == 1 else None


def transcripts(home: Path) -> list[Path]:
    return sorted((home / ".claude" / "projects").glob("*/*.jsonl"))
