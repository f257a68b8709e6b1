"""The durable agent loop: tools, models, budgets, the engine, approvals and time travel."""

from runtime import errors
from runtime.agent import Agent
from runtime.approvals.desk import ApprovalDesk
from runtime.approvals.policy import Directory, Policies, Policy, StaticDirectory
from runtime.display import Display
from runtime.engine import Runtime
from runtime.facts import FactStore
from runtime.history.rollback import RollbackReport
from runtime.model import Model, ModelError, RateLimited, Reply, ScriptedModel, tool_call
from runtime.notifier import FanOut, Notifier, NullNotifier
from runtime.runs.budget import StopReason
from runtime.tools import Tool, ToolContext, ToolSpec, tool
from store import Budget, Message, ToolCall

__all__ = [
    "Agent",
    "ApprovalDesk",
    "Budget",
    "Directory",
    "Display",
    "FactStore",
    "FanOut",
    "Message",
    "Model",
    "ModelError",
    "Notifier",
    "NullNotifier",
    "Policies",
    "Policy",
    "RateLimited",
    "Reply",
    "RollbackReport",
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
