"""A read effect's result, stored once: in the transcript's tool message, not again in its row.

A read's result commits with the checkpoint whose tool message carries it (the runtime queues
the two together, `Journal.outcome`). When a batch shows that message's content to be exactly
the result's JSON, the finished effect's row keeps the checkpoint's seq (`result_seq`) and no
copy (the SQL does so for reads only), and the store reads the result back from that message,
so every reader of an effect (resume, `runs show`, the console, the API) sees it as before.
Mutating effects keep their copy: the ledger hands them to other runs and undos inside a
transaction. A result that is a string is sent to the model as it is, not as JSON, so it
never matches and keeps its copy too (issue 46: a read step's row was half its result).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from store import rows
from store.base import Batch
from store.records import Effect
from store.records import EffectStatus

NEEDED = "result_seq"
"""The effect row's column: the seq of the checkpoint whose tool message holds its result."""


def outcome_params(batch: Batch) -> list[dict[str, Any]]:
    """The batch's outcomes as `finish_effect` parameters, each with the seq of the batch's
    checkpoint holding its result as its tool message's content (None: none does)."""
    if not batch.finish:
        return []
    held = {
        message.tool_call_id: (checkpoint.seq, message.content)
        for checkpoint in batch.checkpoints
        for message in checkpoint.messages
        if message.role == "tool" and message.tool_call_id is not None
    }
    found = []
    for outcome in batch.finish:
        params = rows.outcome_params(outcome)
        seq, content = held.get(outcome.call_id, (None, None))
        result = params["result"]
        same = outcome.status == EffectStatus.COMPLETED and result is not None and content == result
        params[NEEDED] = seq if same else None
        found.append(params)
    return found


def wanted(found: Sequence[rows.Row]) -> list[int]:
    """The checkpoint seqs the effects' results are in, ascending."""
    return sorted({row[NEEDED] for row in found if row[NEEDED] is not None})


def effects(found: Sequence[rows.Row], checkpoints: Sequence[Sequence[Any]]) -> list[Effect]:
    """Effects from their rows, each result read from its checkpoint's tool message where the
    row keeps only the seq; `checkpoints` are the (seq, messages) rows of those seqs."""
    needed = set(wanted(found))
    messages = {seq: _tool_contents(text) for seq, text in checkpoints if seq in needed}
    read = []
    for row in found:
        seq = row[NEEDED]
        if seq is None:
            read.append(rows.effect_from_row(row))
            continue
        try:
            content = messages[seq][row["call_id"]]
        except KeyError as exc:
            raise rows.unreadable("Effect", exc) from exc
        read.append(rows.effect_from_row(row, result=json.loads(content)))
    return read


def _tool_contents(text: str | bytes) -> dict[str, str]:
    return {
        m["tool_call_id"]: m.get("content", "")
        for m in json.loads(text)
        if m.get("role") == "tool" and "tool_call_id" in m
    }
