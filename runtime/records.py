"""The store's records, enums and errors that are the runtime's public vocabulary.

Surfaces name them through here (or through `runtime`), never through `store`, so what a
surface may read and change has one place to live: the runtime's commands and its queries
(`runtime.queries`). These are the same classes as in `store`; only the door is different.
"""

from store import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalState,
    AuditEvent,
    Budget,
    Checkpoint,
    Delivery,
    Effect,
    EffectStatus,
    Message,
    Page,
    Reversibility,
    Run,
    RunState,
    RunStatus,
    ToolCall,
    Usage,
    sqlite_path,
)
from store.errors import (
    DatabaseError,
    DiskFull,
    NotFound,
    SchemaTooNew,
    StoreError,
    UnreadableRecord,
    UnsafeMigration,
)
from store.records import (
    SENSITIVE_MASK,
    SYSTEM_ACTOR,
    Authority,
    EffectConflict,
    LearnedRule,
    OutboxItem,
    Worker,
    masked,
    utcnow,
)

__all__ = [
    "SENSITIVE_MASK",
    "SYSTEM_ACTOR",
    "TERMINAL_STATUSES",
    "Approval",
    "ApprovalState",
    "AuditEvent",
    "Authority",
    "Budget",
    "Checkpoint",
    "DatabaseError",
    "Delivery",
    "DiskFull",
    "Effect",
    "EffectConflict",
    "EffectStatus",
    "LearnedRule",
    "Message",
    "NotFound",
    "OutboxItem",
    "Page",
    "Reversibility",
    "Run",
    "RunState",
    "RunStatus",
    "SchemaTooNew",
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
