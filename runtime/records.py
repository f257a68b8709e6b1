"""The store's records, enums and errors that are the runtime's public vocabulary.

Surfaces name them through here (or through `runtime`), never through `store`, so what a
surface may read and change has one place to live: the runtime's commands and its queries
(`runtime.queries`). These are the same classes as in `store`; only the door is different.
"""

from store import TERMINAL_STATUSES
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Budget
from store import Checkpoint
from store import Delivery
from store import Effect
from store import EffectStatus
from store import Message
from store import Page
from store import Reversibility
from store import Run
from store import RunState
from store import RunStatus
from store import ToolCall
from store import Usage
from store import sqlite_path
from store.errors import DatabaseError
from store.errors import DiskFull
from store.errors import NotFound
from store.errors import SchemaTooNew
from store.errors import StoreError
from store.errors import UnreadableRecord
from store.errors import UnsafeMigration
from store.records import SENSITIVE_MASK
from store.records import SYSTEM_ACTOR
from store.records import AuditAnchor
from store.records import Authority
from store.records import Away
from store.records import EffectConflict
from store.records import EffectReuse
from store.records import Envelope
from store.records import LearnedRule
from store.records import LimitState
from store.records import OutboxItem
from store.records import Passkey
from store.records import ShadowNote
from store.records import Worker
from store.records import masked
from store.records import utcnow

__all__ = [
    "SENSITIVE_MASK",
    "SYSTEM_ACTOR",
    "TERMINAL_STATUSES",
    "Approval",
    "ApprovalState",
    "AuditAnchor",
    "AuditEvent",
    "Authority",
    "Away",
    "Budget",
    "Checkpoint",
    "DatabaseError",
    "Delivery",
    "DiskFull",
    "Effect",
    "EffectConflict",
    "EffectReuse",
    "EffectStatus",
    "Envelope",
    "LearnedRule",
    "LimitState",
    "Message",
    "NotFound",
    "OutboxItem",
    "Page",
    "Passkey",
    "Reversibility",
    "Run",
    "RunState",
    "RunStatus",
    "SchemaTooNew",
    "ShadowNote",
    "StoreError",
    "ToolCall",
    "UnreadableRecord",
    "UnsafeMigration",
    "Usage",
    "Worker",
    "masked",
    "sqlite_path",
    "utcnow",
]
