"""Deciding several pending approvals of one tool together (a batch), from the App Home or
the approvals page: each is its own decision through `Runtime.decide` (its own checks
against its own recorded policy, its own audit event and receipt), so one the person may not
decide is refused and named while the others go through. A batch only decides: it never
makes a learned rule, whatever the person decided."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field

from bot import words
from bot.tasks import Background
from bot.tasks import after_decision
from runtime import Decision
from runtime import Runtime
from runtime import errors
from runtime.records import Approval
from runtime.records import DatabaseError

MAX_BATCH = 100
"""At most this many approvals in one batch (a Slack select holds 100 options)."""


@dataclass
class Batch:
    """What a batch did: the approvals it decided (or voted on), and those it did not, each
    with why (in the words every surface uses)."""

    decision: Decision
    tool: str
    decided: list[Approval] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        return words.batch_outcome(
            self.decision, self.tool, len(self.decided), [f"{i}: {why}" for i, why in self.refused]
        )


def chosen(ids: Iterable[str]) -> list[str]:
    """The ids a person chose, each once, in their order; ValueError past `MAX_BATCH` or none."""
    unique = list(dict.fromkeys(i.strip() for i in ids if i and i.strip()))
    if not unique:
        raise ValueError(words.BATCH_EMPTY)
    if len(unique) > MAX_BATCH:
        raise ValueError(words.batch_too_big(len(unique), MAX_BATCH))
    return unique


async def decide(
    rt: Runtime,
    ids: Iterable[str],
    decision: Decision,
    *,
    tool: str,
    by: str,
    reason: str | None,
    background: Background,
) -> Batch:
    """Decide each chosen approval of `tool` as `by`, one after another; each decided one's
    run resumes in the background. Nothing here is all-or-nothing: a refusal changes only
    its own approval (nothing)."""
    batch = Batch(decision, tool)
    for approval_id in chosen(ids):
        try:
            approval = await rt.queries.approval(approval_id)
            if approval.tool != tool:
                raise errors.InvalidRequest(words.not_in_batch(approval.tool, tool))
            decided = await rt.decide(approval_id, decision, by=by, reason=reason, resume=False)
        except errors.SignoffRuntimeError as exc:
            batch.refused.append((approval_id, words.refusal(exc)))
            continue
        except (DatabaseError, TimeoutError, ConnectionError):
            batch.refused.append((approval_id, words.BATCH_NOT_RECORDED))
            continue
        batch.decided.append(decided)
        after_decision(background, rt, decided)
    return batch


async def decide_and_say(
    rt: Runtime,
    ids: Iterable[str],
    decision: str,
    *,
    tool: str,
    by: str,
    reason: str | None,
    background: Background,
) -> tuple[str, bool]:
    """`decide`, for a surface that tells the person: what was decided and refused (or why
    nothing could be, such as none chosen), and whether nothing was decided. `decision` is
    the form's word, which the surface has checked to be approved or declined."""
    try:
        batch = await decide(
            rt, ids, _decision(decision), tool=tool, by=by, reason=reason, background=background
        )
    except ValueError as exc:
        return str(exc), True
    return batch.summary(), not batch.decided


def _decision(said: str) -> Decision:
    """A batch approves or declines (it never asks)."""
    if said == "approved":
        return "approved"
    if said == "declined":
        return "declined"
    raise ValueError(f"A batch is approved or declined, not {said[:40]!r}.")
