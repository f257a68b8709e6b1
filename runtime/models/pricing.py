"""Prices of hosted models, from configuration, and the cost of a call's tokens.

No price lives in code: providers change them, so they come from `signoff.toml`
(`[prices."model-name"]`) or from the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from store import Usage

PER = 1_000_000


class Price(BaseModel):
    """US dollars per million tokens. Cached prompt tokens and cache writes default to the
    input price when a provider does not price them apart."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(None, ge=0)
    cache_write_per_mtok: float | None = Field(None, ge=0)


@dataclass(frozen=True, slots=True)
class Tokens:
    """A call's tokens as the provider counted them; `input` excludes cache reads and writes."""

    input: int = 0
    output: int = 0
    cached_input: int = 0
    cache_write: int = 0

    @property
    def prompt(self) -> int:
        """Every prompt token, however it was billed: what a run's input budget counts."""
        return self.input + self.cached_input + self.cache_write


def cost(tokens: Tokens, price: Price | None) -> float:
    """The call's cost in dollars; 0 without a price (the run's cost budget cannot see it)."""
    if price is None:
        return 0.0
    cached = (
        price.input_per_mtok
        if price.cached_input_per_mtok is None
        else (price.cached_input_per_mtok)
    )
    write = (
        price.input_per_mtok if price.cache_write_per_mtok is None else (price.cache_write_per_mtok)
    )
    total = (
        tokens.input * price.input_per_mtok
        + tokens.cached_input * cached
        + tokens.cache_write * write
        + tokens.output * price.output_per_mtok
    )
    return round(total / PER, 10)


def usage(tokens: Tokens, price: Price | None) -> Usage:
    """What a call adds to its run's durable usage (the step itself is counted by the run)."""
    return Usage(
        input_tokens=tokens.prompt,
        output_tokens=tokens.output,
        cost=cost(tokens, price),
        cached_input_tokens=tokens.cached_input,
    )


def estimated_prompt(characters: int) -> int:
    """Prompt tokens of a request of this many characters of text, estimated low (about four
    characters a token for prose; structured text takes more tokens, never fewer)."""
    return characters // 4
