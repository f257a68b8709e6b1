"""The public names docs/architecture.md and docs/agents.md promise stay importable, and nothing
else leaks into `__all__`."""

from __future__ import annotations

from types import ModuleType

import pytest

import runtime
import store

DESIGN_RUNTIME = {"Agent", "Budget", "Runtime", "ScriptedModel", "ToolContext", "tool", "tool_call"}
DESIGN_STORE = {"open_store"}


RUNTIME_NAMES = {
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
STORE_NAMES = {
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


@pytest.mark.parametrize(
    ("package", "names", "design"),
    [(runtime, RUNTIME_NAMES, DESIGN_RUNTIME), (store, STORE_NAMES, DESIGN_STORE)],
    ids=["runtime", "store"],
)
def test_a_package_exports_exactly_its_public_names(
    package: ModuleType, names: set[str], design: set[str]
) -> None:
    assert set(package.__all__) == names
    assert names >= design
    assert all(hasattr(package, name) for name in package.__all__)


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
