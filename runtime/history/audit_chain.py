"""Checking the audit trail's hash chain (`store.chain`): walk the events in commit order,
recompute each one's hash from its content and the hash before it, and name the first event
that was edited, deleted or moved; check the anchors (the chain's head at a moment, signed)
against the events still there. The same walk checks an export, which carries each event's
two hashes, so a copy verifies on its own.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Literal

from store import AuditEvent
from store.chain import GENESIS
from store.chain import content
from store.chain import link
from store.records import AuditAnchor

Kind = Literal["edited", "deleted", "reordered", "anchor"]


@dataclass(frozen=True, slots=True)
class Break:
    """Where the chain stops holding, and why."""

    event_id: int | None
    kind: Kind
    text: str


@dataclass(slots=True)
class ChainReport:
    """What a walk found: how many events it checked, those not chained yet (written by a
    process that does not chain, sealed at the next commit), and the first break."""

    checked: int = 0
    unsealed: int = 0
    masked: int = 0
    anchors: int = 0
    first_break: Break | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return self.first_break is None


def holds(event: AuditEvent) -> bool:
    """Whether the event's hash is the hash of its content after its `prev_hash`."""
    if event.prev_hash is None or event.hash is None:
        return False
    text = content(
        event.at, event.actor, event.action, event.run_id, event.approval_id, event.detail
    )
    return link(event.prev_hash, text) == event.hash


def walk(
    events: Sequence[AuditEvent],
    *,
    start: str | None = GENESIS,
    cuts: Iterable[AuditAnchor] = (),
    masked: frozenset[int] = frozenset(),
) -> ChainReport:
    """Check `events` (in commit order) as the chain starting after `start` (None: after
    whatever the first event names, as an export may begin mid-chain). An event may also
    follow a prune's `cuts` anchor (the events between were pruned). The content of events
    in `masked` (shown masked, so not as hashed) is not checked, only their place."""
    report = ChainReport()
    chained = [e for e in events if e.hash is not None]
    report.unsealed = len(events) - len(chained)
    position = {e.hash: n for n, e in enumerate(chained)}
    pruned = {a.hash: a.seq for a in cuts}
    expected = start
    for n, event in enumerate(chained):
        report.checked += 1
        if event.id in masked:
            report.masked += 1
        elif not holds(event):
            report.first_break = Break(
                event.id,
                "edited",
                f"event {event.id} ({event.action}) was changed after it was written: its "
                "content no longer matches its hash",
            )
            return report
        if expected is not None and event.prev_hash != expected:
            cut = pruned.get(event.prev_hash or "")
            previous = chained[n - 1].id if n else None
            if cut is None or not _between(previous, cut, event.id):
                report.first_break = _misplaced(event, chained, position.get(event.prev_hash), n)
                return report
            report.notes.append(f"events up to {cut} before event {event.id} were pruned")
        expected = event.hash
    return report


def _between(low: int | None, seq: int, high: int | None) -> bool:
    return (low is None or low < seq) and (high is None or seq < high)


def _misplaced(
    event: AuditEvent, chained: Sequence[AuditEvent], before: int | None, n: int
) -> Break:
    """The break where `event` does not follow the event before it."""
    if before is not None and before != n - 1:
        follows = chained[before]
        return Break(
            event.id,
            "reordered",
            f"event {event.id} ({event.action}) is out of order: it was written right after "
            f"event {follows.id}",
        )
    previous = chained[n - 1].id if n else None
    after = f" (after event {previous})" if previous is not None else ""
    return Break(
        event.id,
        "deleted",
        f"an event before event {event.id}{after} is missing: it was deleted, or its hash "
        "rewritten",
    )


def check_anchors(
    report: ChainReport, events: Sequence[AuditEvent], anchors: Sequence[AuditAnchor]
) -> None:
    """Each anchor names an event and its hash: the event must still be there with that hash,
    unless a prune removed it (a cut anchor at or past it with no kept event between); and
    no anchor may name an event past the last one (events deleted from the end)."""
    if report.first_break is not None:
        return
    kept = sorted(e.id for e in events if e.id is not None and e.hash is not None)
    by_id = {e.id: e for e in events}
    cuts = sorted(a.seq for a in anchors if a.kind == "cut")
    for anchor in anchors:
        report.anchors += 1
        event = by_id.get(anchor.seq)
        if event is not None and event.hash == anchor.hash:
            continue
        if event is None and _pruned(anchor.seq, kept, cuts):
            continue
        report.first_break = _anchor_break(anchor, event, kept)
        return


def _pruned(seq: int, kept: Sequence[int], cuts: Sequence[int]) -> bool:
    """Whether a prune removed event `seq`: a cut at or past it, no kept event in between."""
    cut = cuts[bisect_left(cuts, seq)] if bisect_left(cuts, seq) < len(cuts) else None
    if cut is None:
        return False
    following = bisect_left(kept, seq)
    return following == len(kept) or kept[following] > cut


def _anchor_break(anchor: AuditAnchor, event: AuditEvent | None, kept: Sequence[int]) -> Break:
    when = f"the {anchor.kind} anchor of {anchor.at:%Y-%m-%d %H:%M} UTC"
    if event is not None:
        text = f"event {anchor.seq} does not have the hash {when} recorded for it"
        return Break(anchor.seq, "anchor", text)
    last = kept[-1] if kept else None
    if last is None or anchor.seq > last:
        text = (
            f"{when} names event {anchor.seq}, past the last one ({last}): events were "
            "deleted from the end"
        )
    else:
        text = f"event {anchor.seq}, which {when} names, is missing: it was deleted"
    return Break(anchor.seq, "deleted", text)
