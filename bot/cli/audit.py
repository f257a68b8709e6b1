"""`signoff audit list|export|verify|anchor`: the audit trail, in the order it was written.

`list` shows events for people (or `--json`); `export` writes every event since a time as
JSON Lines or CSV, to stdout or a file, reading the trail a page at a time, so a long trail
never sits in memory. A file is written next to its destination and moved into place at the
end: a failed export leaves no half file behind. A result an event carries has the fields
the policies mark `sensitive_results` masked (`bot.masking`). `verify` walks the hash chain
(of the database, or of an export, which carries each event's hashes) and names the first
event edited, deleted or reordered; `anchor` signs the chain's head now.
"""

import os
import sys
from collections.abc import AsyncIterator
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import TextIO

import typer

from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import group
from bot.cli.base import options
from bot.cli.base import positive_age
from bot.cli.base import show
from bot.cli.session import refusals
from bot.cli.session import with_database
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.masking import ResultMasks
    from bot.wiring import Process
    from runtime import Database
    from runtime import Queries
    from runtime.history import ChainReport
    from runtime.records import AuditAnchor
    from runtime.records import AuditEvent

audit = group("The audit trail: every request, decision, execution, page and undo.")
PAGE = 1000

Since = Annotated[
    str | None,
    typer.Option(help="An age (30d, 12h) or an ISO 8601 time; default: the whole trail."),
]
RunFilter = Annotated[str | None, typer.Option("--run", help="Only this run's events.")]
ApprovalFilter = Annotated[
    str | None, typer.Option("--approval", help="Only this approval's events.")
]


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    csv = "csv"


@audit.command("list")
def list_events(
    ctx: typer.Context,
    since: Since = None,
    run_id: RunFilter = None,
    approval_id: ApprovalFilter = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """Audit events, oldest first."""
    from bot import audit_export
    from bot.masking import masked_events

    start = _since(since)
    masks = _result_masks(ctx)

    async def work(database: "Database") -> "list[AuditEvent]":
        found = await database.queries.audit(
            since=start, run_id=run_id, approval_id=approval_id, limit=limit
        )
        return await masked_events(database.queries, found, masks)

    found = with_database(ctx, work)
    records = [audit_export.record(event) for event in found]
    show(records, as_json=as_json, table=audit_export.audit_table(found))


@audit.command("export")
def export(
    ctx: typer.Context,
    since: Since = None,
    run_id: RunFilter = None,
    approval_id: ApprovalFilter = None,
    export_format: Annotated[
        ExportFormat, typer.Option("--format", help="jsonl or csv.")
    ] = ExportFormat.jsonl,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
    ] = None,
) -> None:
    """Every audit event since a time, in order, as JSON Lines or CSV."""
    from bot import audit_export
    from bot.masking import masked_events

    start = _since(since)
    as_csv = export_format == ExportFormat.csv
    masks = _result_masks(ctx)

    async def work(database: "Database") -> int:
        written = 0
        with _destination(output) as out:
            async for found in _pages(database.queries, start, run_id, approval_id):
                page = await masked_events(database.queries, found, masks)
                if as_csv:
                    lines = audit_export.csv_lines(page, header=written == 0)
                else:
                    lines = audit_export.jsonl(page, masked=_changed(found, page))
                out.writelines(lines)
                written += len(page)
            if as_csv and written == 0:
                out.writelines(audit_export.csv_lines([], header=True))
        return written

    written = with_database(ctx, work)
    if output is not None:
        typer.echo(f"exported {written} audit event(s) to {output}", err=True)


def _changed(found: "list[AuditEvent]", shown: "list[AuditEvent]") -> frozenset[int]:
    """The events whose detail masking changed (their hash is of what is not shown)."""
    return frozenset(a.id for a, b in zip(found, shown, strict=True) if a.id is not None and a != b)


def _result_masks(ctx: typer.Context) -> "ResultMasks":
    """The policies' masks for results (the audit reads the database, not the runtime)."""
    from bot.masking import ResultMasks
    from bot.settings import load_settings

    with refusals():
        return ResultMasks(load_settings(options(ctx).config).runtime.policies)


async def _pages(
    queries: "Queries", since: datetime | None, run_id: str | None, approval_id: str | None
) -> "AsyncIterator[list[AuditEvent]]":
    after = 0
    while True:
        page = await queries.audit(
            since=since, run_id=run_id, approval_id=approval_id, after=after, limit=PAGE
        )
        if page:
            yield page
        if len(page) < PAGE:
            return
        after = page[-1].id or after


@contextmanager
def _destination(output: Path | None) -> Iterator[TextIO]:
    """stdout, or a file that appears whole or not at all."""
    if output is None:
        yield sys.stdout
        return
    partial = output.with_name(f".{output.name}.partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        partial.replace(output)
    except OSError as exc:
        raise Failure(f"--output: cannot write {output}: {exc.strerror or exc}") from None
    finally:
        partial.unlink(missing_ok=True)


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    from bot.audit_export import since_instant

    def age(value: str) -> timedelta:
        return positive_age("--since", value, what="age", also="an ISO 8601 time")

    try:
        return since_instant(text, datetime.now(UTC), age)
    except OverflowError:
        raise Failure(f"--since: {text!r} reaches before any date") from None


@audit.command("verify")
def verify(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Check an export (JSON Lines) instead of the database."),
    ] = None,
    keys: Annotated[
        Path | None,
        typer.Option("--keys", help="A JWKS to check signed anchors with (default: the key)."),
    ] = None,
) -> None:
    """Walk the audit chain and name the first event edited, deleted or reordered."""

    anchors: list[AuditAnchor] = []
    if file is not None:
        report: ChainReport = _verify_file(file)
    else:

        async def work(database: "Database") -> "tuple[ChainReport, list[AuditAnchor]]":
            return await database.queries.audit_chain(), await database.queries.audit_anchors()

        report, anchors = with_database(ctx, work)
    if report.first_break is not None:
        raise Failure(f"the audit trail does not verify: {report.first_break.text}")
    typer.echo(_summary(report) + _anchor_signatures(ctx, anchors, keys))


def _summary(report: "ChainReport") -> str:
    parts = [f"audit trail intact: {report.checked} event(s) chained"]
    if report.anchors:
        parts.append(f"{report.anchors} anchor(s) match")
    if report.masked:
        parts.append(f"{report.masked} shown masked (their place checked, not their content)")
    if report.unsealed:
        parts.append(f"{report.unsealed} not chained yet (sealed at the next commit)")
    return "; ".join(parts) + "".join(f"\n{note}" for note in report.notes)


def _verify_file(file: Path) -> "ChainReport":
    """An export checked on its own: each line's hash from its content and the line before."""
    import json

    from runtime.history import walk_chain
    from runtime.records import AuditEvent

    events, masked = [], set()
    try:
        lines = file.read_text("utf-8").splitlines()
    except OSError as exc:
        raise Failure(f"--file: cannot read {file}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            event = AuditEvent.model_validate({k: v for k, v in record.items() if k != "masked"})
        except ValueError as exc:
            raise Failure(f"{file}:{number}: not an exported audit event: {exc}") from None
        if record.get("masked") and event.id is not None:
            masked.add(event.id)
        events.append(event)
    return walk_chain(events, start=None, masked=frozenset(masked))


def _anchor_signatures(ctx: typer.Context, anchors: "list[AuditAnchor]", keys: Path | None) -> str:
    """Each signed anchor checked with the keys; a line saying how many, and any unsigned."""
    from bot.cli.receipts import configured_keys
    from bot.cli.receipts import read_json
    from runtime.history import anchor_document
    from signoff.receipts import BadReceipt
    from signoff.receipts import check_signature

    if not anchors:
        return ""
    signed = [a for a in anchors if a.signed is not None]
    if signed:
        jwks = read_json(keys, "--keys") if keys is not None else configured_keys(ctx)
        for anchor in signed:
            assert anchor.signed is not None
            if {k: v for k, v in anchor.signed.items() if k != "signature"} != anchor_document(
                anchor
            ):
                raise Failure(
                    f"the {anchor.kind} anchor at event {anchor.seq} changed since signed"
                )
            try:
                check_signature(anchor.signed, jwks)
            except BadReceipt as exc:
                raise Failure(f"the {anchor.kind} anchor at event {anchor.seq}: {exc}") from None
    unsigned = len(anchors) - len(signed)
    note = f"; {unsigned} not signed yet (the server signs them)" if unsigned else ""
    return f"\n{len(signed)} anchor signature(s) verified{note}"


@audit.command("anchor")
def anchor(ctx: typer.Context) -> None:
    """Anchor the chain's head now, signed with the configured key, and print it."""
    import json

    async def work(process: "Process") -> "AuditAnchor | None":
        return await process.runtime.anchor_audit("manual")

    made = with_process(ctx, work, agents=False)
    if made is None:
        raise Failure("the audit trail is empty: nothing to anchor")
    typer.echo(json.dumps(made.signed or made.model_dump(mode="json"), indent=2))
