"""The durable agent loop: tools, models, budgets, the engine, approvals and time travel."""

from runtime import errors
from runtime.agent import Agent
from runtime.approvals import ApprovalDesk
from runtime.budget import StopReason
from runtime.engine import Runtime
from runtime.facts import FactStore
from runtime.model import Model, ModelError, RateLimited, Reply, ScriptedModel, tool_call
from runtime.notifier import FanOut, Notifier, NullNotifier
from runtime.policy import Directory, Policies, Policy, StaticDirectory
from runtime.rollback import RollbackReport
from runtime.tools import Tool, ToolContext, ToolSpec, tool
from store import Budget, Message, ToolCall

__all__ = [
    "Agent",
    "ApprovalDesk",
    "Budget",
    "Directory",
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
