"""The public names docs/architecture.md and docs/agents.md promise stay importable, and nothing
else leaks into `__all__`."""

from __future__ import annotations

import runtime
import store

DESIGN_RUNTIME = {"Agent", "Budget", "Runtime", "ScriptedModel", "ToolContext", "tool", "tool_call"}
DESIGN_STORE = {"open_store"}


def test_runtime_exports_exactly_its_public_names() -> None:
    assert set(runtime.__all__) == {
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
        "Effect",
        "EffectStatus",
        "Display",
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
    }
    assert set(runtime.__all__) >= DESIGN_RUNTIME
    assert all(hasattr(runtime, name) for name in runtime.__all__)


def test_store_exports_exactly_its_public_names() -> None:
    assert set(store.__all__) == {
        "DEFAULT_PROTECTED_FACTS",
        "TERMINAL_STATUSES",
        "Approval",
        "ApprovalState",
        "AuditEvent",
        "Batch",
        "Budget",
        "Checkpoint",
        "Committed",
        "Delivery",
        "Effect",
        "EffectOutcome",
        "EffectStatus",
        "Fact",
        "Message",
        "Page",
        "PageSettlement",
        "Reversibility",
        "Run",
        "RunState",
        "RunStatus",
        "Store",
        "ToolCall",
        "Usage",
        "errors",
        "open_store",
        "sqlite_path",
    }
    assert set(store.__all__) >= DESIGN_STORE
    assert all(hasattr(store, name) for name in store.__all__)


def test_the_runtime_methods_design_names_exist() -> None:
    for method in (
        "start",
        "get",
        "list",
        "approvals",
        "decide",
        "recover",
        "cancel",
        "history",
        "state_at",
        "fork",
        "rollback",
    ):
        assert callable(getattr(runtime.Runtime, method)), method
