"""The durable agent loop: tools, models, budgets, the engine, approvals and time travel.

Surfaces enter by this package: the `Runtime`'s commands, its `Queries`, the `Database` a
process opens, and the records of `runtime.records`.

Each name is imported from its module when first used (PEP 562), so a process that needs
only the records or the queries (a CLI read) does not load the engine, the scheduler and
the approval desk."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from runtime import errors
    from runtime.agent import Agent
    from runtime.approvals.deciding import Decision
    from runtime.approvals.desk import ApprovalDesk
    from runtime.approvals.policy import Directory
    from runtime.approvals.policy import Policies
    from runtime.approvals.policy import Policy
    from runtime.approvals.policy import StaticDirectory
    from runtime.database import Database
    from runtime.display import Display
    from runtime.engine import Runtime
    from runtime.facts import FactStore
    from runtime.history.rollback import RollbackReport
    from runtime.model import Model
    from runtime.model import ModelError
    from runtime.model import RateLimited
    from runtime.model import Reply
    from runtime.model import ScriptedModel
    from runtime.model import tool_call
    from runtime.notifier import FanOut
    from runtime.notifier import Notifier
    from runtime.notifier import NullNotifier
    from runtime.permissions import Access
    from runtime.permissions import Actor
    from runtime.permissions import Permission
    from runtime.queries import Queries
    from runtime.records import Approval
    from runtime.records import ApprovalState
    from runtime.records import AuditEvent
    from runtime.records import Budget
    from runtime.records import Checkpoint
    from runtime.records import Effect
    from runtime.records import EffectStatus
    from runtime.records import Message
    from runtime.records import Page
    from runtime.records import Run
    from runtime.records import RunStatus
    from runtime.records import ToolCall
    from runtime.runs.budget import StopReason
    from runtime.tools import Tool
    from runtime.tools import ToolContext
    from runtime.tools import ToolSpec
    from runtime.tools import tool

__all__ = [
    "Access",
    "Actor",
    "Agent",
    "Approval",
    "ApprovalDesk",
    "ApprovalState",
    "AuditEvent",
    "Budget",
    "Checkpoint",
    "Database",
    "Decision",
    "Directory",
    "Display",
    "Effect",
    "EffectStatus",
    "FactStore",
    "FanOut",
    "Message",
    "Model",
    "ModelError",
    "Notifier",
    "NullNotifier",
    "Page",
    "Permission",
    "Policies",
    "Policy",
    "Queries",
    "RateLimited",
    "Reply",
    "RollbackReport",
    "Run",
    "RunStatus",
    "Runtime",
    "ScriptedModel",
    "StaticDirectory",
    "StopReason",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolSpec",
    "errors",
    "tool",
    "tool_call",
]

_RECORDS = "runtime.records"
_HOME = {  # each public name's module
    "Access": "runtime.permissions",
    "Actor": "runtime.permissions",
    "Agent": "runtime.agent",
    "Approval": _RECORDS,
    "ApprovalDesk": "runtime.approvals.desk",
    "ApprovalState": _RECORDS,
    "AuditEvent": _RECORDS,
    "Budget": _RECORDS,
    "Checkpoint": _RECORDS,
    "Database": "runtime.database",
    "Decision": "runtime.approvals.deciding",
    "Directory": "runtime.approvals.policy",
    "Display": "runtime.display",
    "Effect": _RECORDS,
    "EffectStatus": _RECORDS,
    "FactStore": "runtime.facts",
    "FanOut": "runtime.notifier",
    "Message": _RECORDS,
    "Model": "runtime.model",
    "ModelError": "runtime.model",
    "Notifier": "runtime.notifier",
    "NullNotifier": "runtime.notifier",
    "Page": _RECORDS,
    "Permission": "runtime.permissions",
    "Policies": "runtime.approvals.policy",
    "Policy": "runtime.approvals.policy",
    "Queries": "runtime.queries",
    "RateLimited": "runtime.model",
    "Reply": "runtime.model",
    "RollbackReport": "runtime.history.rollback",
    "Run": _RECORDS,
    "RunStatus": _RECORDS,
    "Runtime": "runtime.engine",
    "ScriptedModel": "runtime.model",
    "StaticDirectory": "runtime.approvals.policy",
    "StopReason": "runtime.runs.budget",
    "Tool": "runtime.tools",
    "ToolCall": _RECORDS,
    "ToolContext": "runtime.tools",
    "ToolSpec": "runtime.tools",
    "tool": "runtime.tools",
    "tool_call": "runtime.model",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _HOME.get(name)
    if module is None:
        if name == "errors":
            return importlib.import_module("runtime.errors")
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
