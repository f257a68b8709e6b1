"""What happened and going back: a run's history and forks (time travel), rollback with its
undo log, and the listings surfaces page through.

`__all__` names what the other packages may import, each loaded on first use
(`runtime.exports.lazy`); a module path is private to the package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.exports import lazy

if TYPE_CHECKING:
    from runtime.history.anchors import document as anchor_document
    from runtime.history.audit_chain import ChainReport
    from runtime.history.audit_chain import check_anchors
    from runtime.history.audit_chain import walk as walk_chain
    from runtime.history.inbox import MAX_PAGE as INBOX_PAGE
    from runtime.history.listing import approval_state
    from runtime.history.listing import run_status
    from runtime.history.rollback import RollbackReport
    from runtime.history.rollback import compensate_all
    from runtime.history.shared import refusal as shared_refusal
    from runtime.history.shared import shared as shared_effects
    from runtime.history.sinks import SinkLease
    from runtime.history.undo_log import unfinished as unfinished_rollback

__all__ = [
    "INBOX_PAGE",
    "ChainReport",
    "RollbackReport",
    "SinkLease",
    "anchor_document",
    "approval_state",
    "check_anchors",
    "compensate_all",
    "run_status",
    "shared_effects",
    "shared_refusal",
    "unfinished_rollback",
    "walk_chain",
]

_HOME = {
    "anchor_document": "runtime.history.anchors:document",
    "approval_state": "runtime.history.listing",
    "ChainReport": "runtime.history.audit_chain",
    "check_anchors": "runtime.history.audit_chain",
    "compensate_all": "runtime.history.rollback",
    "INBOX_PAGE": "runtime.history.inbox:MAX_PAGE",
    "RollbackReport": "runtime.history.rollback",
    "run_status": "runtime.history.listing",
    "shared_effects": "runtime.history.shared:shared",
    "shared_refusal": "runtime.history.shared:refusal",
    "SinkLease": "runtime.history.sinks",
    "unfinished_rollback": "runtime.history.undo_log:unfinished",
    "walk_chain": "runtime.history.audit_chain:walk",
}

__getattr__, __dir__ = lazy(__name__, _HOME)
