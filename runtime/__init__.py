"""The durable agent loop: tools, models, budgets, the engine, approvals and time travel.

Surfaces enter by this package: the `Runtime`'s commands, its `Queries`, the `Database` a
process opens, and the records of `runtime.records`."""

from runtime import errors
from runtime.agent import Agent
from runtime.approvals.desk import ApprovalDesk, Decision
from runtime.approvals.policy import Directory, Policies, Policy, StaticDirectory
from runtime.database import Database
from runtime.engine import Runtime
from runtime.facts import FactStore
from runtime.history.rollback import RollbackReport
from runtime.model import Model, ModelError, RateLimited, Reply, ScriptedModel, tool_call
from runtime.notifier import FanOut, Notifier, NullNotifier
from runtime.queries import Queries
from runtime.records import (
    Approval,
    ApprovalState,
    AuditEvent,
    Budget,
    Checkpoint,
    Effect,
    EffectStatus,
    Message,
    Page,
    Run,
    RunStatus,
    ToolCall,
)
from runtime.runs.budget import StopReason
from runtime.tools import Tool, ToolContext, ToolSpec, tool

__all__ = [
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
