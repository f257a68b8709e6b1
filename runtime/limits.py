"""The input limits every surface checks against (one validation layer): sizes, depth and
the id pattern, and the plain one-line reason for a value that breaks one."""

from store.limits import ID_PATTERN
from store.limits import MAX_AGENT
from store.limits import MAX_ARGS_BYTES
from store.limits import MAX_DEPTH
from store.limits import MAX_ID
from store.limits import MAX_REASON
from store.limits import MAX_REQUESTER
from store.limits import MAX_RESUME_STATE
from store.limits import MAX_TASK
from store.limits import MAX_TOOL
from store.limits import check_args
from store.limits import nesting_depth
from store.limits import plain_reason

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
