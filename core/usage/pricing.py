"""Cost estimates from a price table: the config's ``[[prices]]`` rows, then defaults.

An estimate, never a bill: the table is per model, in US dollars per million
tokens, and every row carries the date its prices were read, shown beside the
figure. A model no row matches has no cost (shown as ``?``), never a guess
from another model. The defaults are the providers' published list prices on
the date each row says; a person whose prices differ (a newer model, a
discount, a different currency) writes their own rows, which come first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.config.config import PriceConfig
from core.model.usage import Tokens

DEFAULT_PRICES: tuple[PriceConfig, ...] = (
    PriceConfig("claude-opus-4*", 15.0, 75.0, 1.5, 18.75, "2025-08-05"),
    PriceConfig("claude-sonnet-4*", 3.0, 15.0, 0.3, 3.75, "2025-08-05"),
    PriceConfig("claude-3-7-sonnet*", 3.0, 15.0, 0.3, 3.75, "2025-08-05"),
    PriceConfig("claude-3-5-haiku*", 0.8, 4.0, 0.08, 1.0, "2025-08-05"),
    PriceConfig("gpt-5-mini*", 0.25, 2.0, 0.025, 0.0, "2025-08-07"),
    PriceConfig("gpt-5-nano*", 0.05, 0.4, 0.005, 0.0, "2025-08-07"),
    PriceConfig("gpt-5", 1.25, 10.0, 0.125, 0.0, "2025-08-07"),
    PriceConfig("gpt-5-codex", 1.25, 10.0, 0.125, 0.0, "2025-09-15"),
    PriceConfig("gpt-4.1", 2.0, 8.0, 0.5, 0.0, "2025-04-14"),
)
"""Published list prices (USD per million tokens) on the date of each row."""


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
