"""Out of office (issue 43.4): a person says they are away until a time and names a delegate;
meanwhile the delegate decides the approvals that name that person, *for* them (the record,
the audit and every card say "carol for alice").

The rules (docs/approvers.md, "Away and delegates"):

- A delegate decides only what the approval's recorded authority names the away person for
  directly (by id or address; the escalation target once escalated). An approval routed to a
  user group is the group's: a delegate outside it may not decide it, so delegation never
  widens a policy beyond its group.
- A delegate never approves a request of their own, whatever the policy says of
  self-approval; and the away person's own checks hold too (no approving their request).
- One level: a delegate's own delegate does not inherit.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from runtime import errors
from runtime.approvals.policy import Policy
from store import AuditEvent
from store import Store
from store.records import Away

MAX_AWAY_DAYS = 366


def named(policy: Policy, *, escalated: bool) -> set[str]:
    """Who the policy names directly (never through a group), as they decide."""
    people = [p for p in policy.approvers if not p.startswith("S")]
    if escalated and policy.escalate_to and not policy.escalate_to.startswith("S"):
        people.append(policy.escalate_to)
    return {p.lower() if "@" in p else p for p in people}


def principal(away: Iterable[Away], policy: Policy, by: str, *, escalated: bool) -> str | None:
    """The away person (of those `away` now) `by` may decide for under `policy`, if any."""
    direct = named(policy, escalated=escalated)
    for each in away:
        if each.delegate == by and each.person in direct:
            return each.person
    return None


async def set_away(
    store: Store, person: str, *, until: datetime, delegate: str, now: datetime
) -> Away:
    """Record that `person` is away until `until` with `delegate`; audited."""
    person, delegate = _who(person), _who(delegate)
    if not person or not delegate:
        raise errors.InvalidRequest("away needs the person and their delegate")
    if person == delegate:
        raise errors.InvalidRequest(f"{person} cannot be their own delegate")
    if until.tzinfo is None:
        raise errors.InvalidRequest("the end of an absence needs a time zone (UTC: ...Z)")
    if until <= now:
        raise errors.InvalidRequest(f"{until.isoformat()} has passed; away until a later time")
    if (until - now).days > MAX_AWAY_DAYS:
        raise errors.InvalidRequest(f"away for at most {MAX_AWAY_DAYS} days at a time")
    await store.set_away(person, until=until, delegate=delegate, at=now)
    detail = {"until": until.isoformat(), "delegate": delegate}
    await store.record_event(AuditEvent(action="away_set", actor=person, detail=detail, at=now))
    return Away(person=person, until=until, delegate=delegate, set_at=now)


async def back(store: Store, person: str, *, now: datetime) -> bool:
    """`person` is back: their delegate no longer decides for them; audited if they were away."""
    person = _who(person)
    if not await store.clear_away(person):
        return False
    await store.record_event(AuditEvent(action="away_cleared", actor=person, at=now))
    return True


def _who(person: str) -> str:
    person = person.strip()
    return person.lower() if "@" in person else person
