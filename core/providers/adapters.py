"""Which adapter runs a provider, by name: each member of ``Provider`` is named here, and
one with no adapter yet is refused by name (never run as another provider).

Kept out of ``core.providers.base`` (the port both adapters implement) so the
port does not import its own implementations.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.model.enums import Provider
from core.model.errors import ProviderError
from core.providers.base import ProviderAdapter
from core.providers.claude import ClaudeAdapter
from core.providers.codex import CodexAdapter
from core.providers.gemini import GeminiAdapter
from core.providers.opencode import OpencodeAdapter


def get_adapter(
    provider: Provider | str, command: str | Sequence[str] | None = None
) -> ProviderAdapter:
    """The adapter for ``provider``; ``command`` overrides the executable (e.g. the fake agent)."""
    provider = Provider(provider)
    if provider is Provider.CLAUDE:
        return claude_adapter(command)
    if provider is Provider.CODEX:
        return codex_adapter(command)
    if provider is Provider.OPENCODE:
        return OpencodeAdapter(command=_as_command(command, "opencode"))
    if provider is Provider.GEMINI:
        return GeminiAdapter(command=_as_command(command, "gemini"))
    raise ProviderError(f"no adapter for provider {provider.value!r}",
                        code="provider_unsupported")


def claude_adapter(command: str | Sequence[str] | None = None) -> ClaudeAdapter:
    """The Claude adapter itself, for callers that pass its own launch options."""
    return ClaudeAdapter(command=_as_command(command, "claude"))


def codex_adapter(command: str | Sequence[str] | None = None) -> CodexAdapter:
    """The Codex adapter itself, for callers that pass its own launch options."""
    return CodexAdapter(command=_as_command(command, "codex"))


def _as_command(command: str | Sequence[str] | None, default: str) -> tuple[str, ...]:
    if command is None:
        return (default,)
    if isinstance(command, str):
        return (command,)
    return tuple(command)
