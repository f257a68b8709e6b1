"""The digest of what a process decides by: its agents, policies, rules and limits, who may
write rules, who settles pages and reads runs, and what each API token may do. Each `signoff
serve` records it at start (`bot.workers`), each approval it asks carries it, and
`signoff doctor` lists which workers run which: two workers that disagree are reported,
never trusted to agree. Secrets, addresses and the worker's own id are left out: they
differ between workers by design."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bot.settings import Settings

PREFIX = "sha256:"


def config_digest(settings: Settings) -> str:
    """`sha256:<hex>` of the settings that decide who may do what."""
    text = json.dumps(_material(settings), sort_keys=True, separators=(",", ":"), default=str)
    return PREFIX + hashlib.sha256(text.encode()).hexdigest()


def short(digest: str | None) -> str:
    """A digest as people read it: enough of it to tell two apart."""
    return (digest or "none").removeprefix(PREFIX)[:12]


def _material(settings: Settings) -> dict[str, Any]:
    runtime, slack = settings.runtime, settings.slack
    return {
        "agents": list(runtime.agents),
        "policies": _policies(settings),
        "learned_rules": runtime.learned_rules.model_dump(mode="json"),
        "limits": {name: limit.model_dump(mode="json") for name, limit in runtime.limits.items()},
        "envelopes": runtime.envelopes.model_dump(mode="json"),
        "protected_facts": sorted(runtime.protected_facts),
        "page_resolvers": sorted(slack.page_resolvers),
        "readers": sorted(slack.readers),
        "api_tokens": {
            name: {"scopes": sorted(token.scopes), "revoked": token.revoked}
            for name, token in settings.api.tokens.items()
        },
        "legacy_token": settings.api.token is not None,  # every scope
    }


def _policies(settings: Settings) -> dict[str, Any]:
    """The policies as they decide: without `external`, which only start-up checks (so a
    file that marks a policy external runs the same configuration as before)."""
    policies: dict[str, Any] = settings.runtime.policies.model_dump(mode="json")
    for policy in [policies["default"], *policies["tools"].values()]:
        policy.pop("external", None)
    return policies
