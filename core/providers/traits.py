"""What each provider's CLI does differently, as data, for the lean paths.

The hook process and a few front-end lines need to know how a CLI behaves (does
its PostToolUse mean the command passed? does a UserPromptSubmit hook's output
reach the model?) without importing the adapters. Each answer is written here
once per provider; everything else asks the adapter (``core.providers.base``).
Stdlib and the vocabulary only, and no ``dataclasses`` (its import alone, with
``inspect`` behind it, was ~9 ms of every hook): the hook path imports it.
"""

from __future__ import annotations

from typing import NamedTuple

from core.model.session_enums import Provider


class ProviderTraits(NamedTuple):
    """How one provider's CLI behaves where Switchboard's generic code must know."""

    post_tool_use_means_passed: bool
    """A PostToolUse without an exit code still means the command passed (Claude
    reports a non-zero exit through PostToolUseFailure instead)."""
    prompt_hook_adds_context: bool
    """A UserPromptSubmit hook's ``additionalContext`` is added to the turn."""
    hooks_as_launch_overrides: bool
    """Its launches carry the hooks as ``-c`` overrides, which a stand-in agent that
    reads no config must be given directly (``--hook-command``)."""
    limits_only_in_usage_file: bool
    """A turn the service refused on a usage limit fires no hook (no StopFailure): the
    limit is found only in the CLI's own usage file (Codex's rollout)."""


TRAITS: dict[Provider, ProviderTraits] = {
    Provider.CLAUDE: ProviderTraits(post_tool_use_means_passed=True,
                                    prompt_hook_adds_context=True,
                                    hooks_as_launch_overrides=False,
                                    limits_only_in_usage_file=False),
    Provider.CODEX: ProviderTraits(post_tool_use_means_passed=False,
                                   prompt_hook_adds_context=False,
                                   hooks_as_launch_overrides=True,
                                   limits_only_in_usage_file=True),
    # Gemini CLI 0.61.0: AfterTool carries no exit status; a BeforeAgent hook's output is
    # not relied on; hooks come from the per-launch settings home (GEMINI_CLI_HOME), which
    # the fake agent reads; a refused turn (429) is retried without end and fires no hook.
    Provider.GEMINI: ProviderTraits(post_tool_use_means_passed=False,
                                    prompt_hook_adds_context=False,
                                    hooks_as_launch_overrides=False,
                                    limits_only_in_usage_file=False),
    # OpenCode 1.18.33: events come from a per-launch plugin named in its environment
    # (OPENCODE_CONFIG_CONTENT), which a stand-in that runs no plugin must be given.
    Provider.OPENCODE: ProviderTraits(post_tool_use_means_passed=False,
                                      prompt_hook_adds_context=False,
                                      hooks_as_launch_overrides=True,
                                      limits_only_in_usage_file=False),
}


NO_EVENT_FOR: dict[Provider, str] = {
    Provider.CLAUDE: "",
    Provider.CODEX: "",  # a refused turn fires no hook, but its rollout names the limit
    # Gemini CLI 0.61.0 (tests/fixtures/hooks/gemini-0.61.0.tsv, docs/cli-versions.md)
    Provider.GEMINI: "its start-up folder-trust question, an interrupted turn (Esc), a "
                     "turn the service refused (a 429 is retried without end) and a whole "
                     "session in a folder untrusted when it started (it loads no hook then)",
    # OpenCode 1.18.33 (tests/fixtures/hooks/opencode-1.18.33-*.jsonl); an Esc Esc
    # interrupt ends in session.idle (measured), so it reads ready, not unknown
    Provider.OPENCODE: "its process ending and a turn the service refused (it retries a "
                       "429 itself)",
}
"""What a provider's CLI sends no hook or event for: its activity shows unknown there (or
what the screen shows), never a guess; ``doctor`` says it."""


LIMITS_UNREAD: dict[Provider, str] = {
    Provider.CLAUDE: "",  # StopFailure names the limit and its reset
    Provider.CODEX: "",  # its rollout names the limit (limits_only_in_usage_file)
    Provider.GEMINI: "Gemini CLI 0.61.0 records none (a 429 is retried without end and "
                     "leaves no line in its chat record)",
    Provider.OPENCODE: "OpenCode 1.18.33 records none (it retries a 429 itself; its "
                       "messages carry no limit)",
}
"""Why ``switchboard usage`` shows no usage limit for a provider (empty: it does show
them); ``doctor`` says it, ``docs/cli-versions.md`` records the measurement."""


UNBOUND_HINT: dict[Provider, str] = {
    Provider.CLAUDE: "",
    Provider.CODEX: "",
    # Gemini CLI 0.61.0 (docs/cli-versions.md, folder trust): after the answer it can miss
    # its own restart and run on untrusted, and no hook says so
    Provider.GEMINI: "Gemini CLI: if its folder-trust question was just answered, it may "
                     "have kept running untrusted (no hooks, no tools; it then shows "
                     "\"Skipping project agents due to untrusted folder\"). The answer is "
                     "saved: stop the agent and start it again (s, then n) and it comes up "
                     "trusted.",
    Provider.OPENCODE: "",
}
"""What the person can do when a launch of this provider is never reached by a hook (the
``bind_timeout`` recovery adds it; empty: nothing more to say than the generic text)."""


def traits(provider: Provider | str) -> ProviderTraits:
    """The traits of ``provider`` (a name is read as the enum: a stranger raises)."""
    return TRAITS[Provider(provider)]
