"""The input limits every surface checks against (one validation layer): sizes, depth and
the id pattern, and the plain one-line reason for a value that breaks one."""

from store.limits import (
    ID_PATTERN,
    MAX_AGENT,
    MAX_ARGS_BYTES,
    MAX_DEPTH,
    MAX_ID,
    MAX_REASON,
    MAX_REQUESTER,
    MAX_RESUME_STATE,
    MAX_TASK,
    MAX_TOOL,
    check_args,
    nesting_depth,
    plain_reason,
)

__all__ = [
    "ID_PATTERN",
    "MAX_AGENT",
    "MAX_ARGS_BYTES",
    "MAX_DEPTH",
    "MAX_ID",
    "MAX_REASON",
    "MAX_REQUESTER",
    "MAX_RESUME_STATE",
    "MAX_TASK",
    "MAX_TOOL",
    "check_args",
    "nesting_depth",
    "plain_reason",
]
