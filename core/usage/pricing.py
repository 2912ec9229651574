"""Cost estimates from a price table: the config's ``[[prices]]`` rows, then defaults.

An estimate, never a bill: the table is per model, in US dollars per million
tokens, and every row carries the date its prices were read, shown beside the
figure. A model no row matches has no cost (shown as ``?``), never a guess
from another model. The defaults cover every model the tested CLI releases
start with or offer in their model picker (``tests/realcli/drift.py`` names one
that has no row); a person whose prices differ (a newer model, a discount, a
different currency) writes their own rows, which come first.

Where each default comes from (``docs/decisions.md``, "usage prices"): Claude
models from the price tiers Claude Code 2.1.332 itself ships in its model
catalog (the five-minute cache write is ``cache_write``); the older Claude and
GPT-5 rows from the providers' published list prices; the GPT-5.x and GPT-6
models Codex 0.166-0.171 offer have no price stated anywhere Switchboard could
read, so they carry the GPT-5 family's published price until a person's own row
or a newer default replaces it. Gemini models (what Gemini CLI 0.61.0 starts with and
names as its default, preview, flash and flash-lite models) and OpenCode 1.18.33's
default (``big-pickle``, OpenCode Zen) from the model catalogue OpenCode 1.18.33 ships
(a models.dev snapshot in its binary: the ``google`` provider's rows are the Gemini
API's prices; ``gemini-3-pro-preview``, gone from that list, from its ``google-vertex``
row). Gemini's rows take the base tier (prompts up to 200k tokens; 3.1 Pro costs more
above) and no cache write price (the Gemini API bills cache storage by the hour, which
no record here states). Within a table an exact id beats a prefix, and
prefixes are tried in order, so a longer prefix comes before the shorter one it
extends (``claude-opus-5-5*`` before ``claude-opus-5*``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.config.config import PriceConfig
from core.model.usage import Tokens

CLAUDE_CATALOG = "2026-12-06"
"""The day the Claude rows were read from Claude Code 2.1.332's model catalog."""
GPT_FAMILY = "2026-12-06"
"""The day the GPT-5.x/GPT-6 rows were given the GPT-5 family's published price."""
OPENCODE_CATALOG = "2026-12-07"
"""The day the Gemini and OpenCode Zen rows were read from OpenCode 1.18.33's catalogue."""

DEFAULT_PRICES: tuple[PriceConfig, ...] = (
    # Claude Code 2.1.332's catalog (tier names in its bundle: tier_4_20_cache_read_0_20 ...)
    PriceConfig("claude-opus-5-5*", 4.0, 20.0, 0.2, 5.0, CLAUDE_CATALOG),
    PriceConfig("claude-opus-5*", 5.0, 25.0, 0.5, 6.25, CLAUDE_CATALOG),
    PriceConfig("claude-opus-4-5*", 5.0, 25.0, 0.5, 6.25, CLAUDE_CATALOG),
    PriceConfig("claude-opus-4-6*", 5.0, 25.0, 0.5, 6.25, CLAUDE_CATALOG),
    PriceConfig("claude-opus-4-7*", 5.0, 25.0, 0.5, 6.25, CLAUDE_CATALOG),
    PriceConfig("claude-opus-4-8*", 5.0, 25.0, 0.5, 6.25, CLAUDE_CATALOG),
    PriceConfig("claude-opus-4*", 15.0, 75.0, 1.5, 18.75, "2025-08-05"),
    PriceConfig("claude-sonnet-5-5*", 2.0, 10.0, 0.1, 2.5, CLAUDE_CATALOG),
    PriceConfig("claude-sonnet-5*", 2.0, 10.0, 0.2, 2.5, CLAUDE_CATALOG),
    PriceConfig("claude-sonnet-4*", 3.0, 15.0, 0.3, 3.75, "2025-08-05"),
    PriceConfig("claude-3-7-sonnet*", 3.0, 15.0, 0.3, 3.75, "2025-08-05"),
    PriceConfig("claude-3-5-sonnet*", 3.0, 15.0, 0.3, 3.75, CLAUDE_CATALOG),
    PriceConfig("claude-haiku-5-5*", 0.1, 0.5, 0.01, 0.125, CLAUDE_CATALOG),
    PriceConfig("claude-haiku-4-5*", 1.0, 5.0, 0.1, 1.25, CLAUDE_CATALOG),
    PriceConfig("claude-3-5-haiku*", 0.8, 4.0, 0.08, 1.0, "2025-08-05"),
    PriceConfig("claude-fable-5-2*", 8.0, 40.0, 0.2, 10.0, CLAUDE_CATALOG),
    PriceConfig("claude-fable-5-1*", 10.0, 50.0, 0.25, 12.5, CLAUDE_CATALOG),
    PriceConfig("claude-fable-5*", 10.0, 50.0, 1.0, 12.5, CLAUDE_CATALOG),
    PriceConfig("claude-mythos-5-2*", 8.0, 40.0, 0.2, 10.0, CLAUDE_CATALOG),
    PriceConfig("claude-mythos-5-1*", 10.0, 50.0, 0.25, 12.5, CLAUDE_CATALOG),
    PriceConfig("claude-mythos-5*", 10.0, 50.0, 1.0, 12.5, CLAUDE_CATALOG),
    # OpenAI's published list prices
    PriceConfig("gpt-5-mini*", 0.25, 2.0, 0.025, 0.0, "2025-08-07"),
    PriceConfig("gpt-5-nano*", 0.05, 0.4, 0.005, 0.0, "2025-08-07"),
    PriceConfig("gpt-5", 1.25, 10.0, 0.125, 0.0, "2025-08-07"),
    PriceConfig("gpt-5-codex", 1.25, 10.0, 0.125, 0.0, "2025-09-15"),
    PriceConfig("gpt-4.1", 2.0, 8.0, 0.5, 0.0, "2025-04-14"),
    # Codex 0.166-0.171's picker and default: no stated price; the GPT-5 family's
    PriceConfig("gpt-5.*", 1.25, 10.0, 0.125, 0.0, GPT_FAMILY),
    PriceConfig("gpt-6*", 1.25, 10.0, 0.125, 0.0, GPT_FAMILY),
    # Gemini API (OpenCode 1.18.33's catalogue, provider google; base tier)
    PriceConfig("gemini-3.1-pro-preview*", 2.0, 12.0, 0.2, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-3-pro*", 2.0, 12.0, 0.2, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-3-flash-preview", 0.5, 3.0, 0.05, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-3.8-flash", 0.75, 3.75, 0.075, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-3.5-flash-lite", 0.3, 2.5, 0.03, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-3.5-flash", 1.5, 9.0, 0.15, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-3.1-flash-lite", 0.25, 1.5, 0.025, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-2.5-pro", 1.25, 10.0, 0.125, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-2.5-flash-lite", 0.1, 0.4, 0.01, 0.0, OPENCODE_CATALOG),
    PriceConfig("gemini-2.5-flash", 0.3, 2.5, 0.03, 0.0, OPENCODE_CATALOG),
    # OpenCode 1.18.33's default model without a provider of the person's (OpenCode Zen)
    PriceConfig("big-pickle", 0.0, 0.0, 0.0, 0.0, OPENCODE_CATALOG),
)
"""Prices in US dollars per million tokens (input, output, cache read, cache write) on
the date of each row."""


@dataclass(frozen=True)
class Priced:
    """The cost of some tokens, and the row it came from (None: no row matched)."""

    usd: float | None
    price: PriceConfig | None
    from_config: bool = False


def _matches(pattern: str, model: str) -> bool:
    return model.startswith(pattern[:-1]) if pattern.endswith("*") else model == pattern


def price_for(model: str | None, configured: Sequence[PriceConfig]
              ) -> tuple[PriceConfig | None, bool]:
    """The first configured row matching ``model``, else the first default; an exact id
    beats a prefix within each table."""
    if not model:
        return None, False
    for table, from_config in ((configured, True), (DEFAULT_PRICES, False)):
        exact = [row for row in table if row.model == model]
        if exact:
            return exact[0], from_config
        for row in table:
            if _matches(row.model, model):
                return row, from_config
    return None, False


def cost(model: str | None, tokens: Tokens, configured: Sequence[PriceConfig]) -> Priced:
    row, from_config = price_for(model, configured)
    if row is None:
        return Priced(None, None)
    usd = (tokens.input * row.input + tokens.output * row.output
           + tokens.cache_read * row.cache_read + tokens.cache_write * row.cache_write) / 1e6
    return Priced(usd, row, from_config)
