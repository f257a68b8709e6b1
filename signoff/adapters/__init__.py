"""Signoff as the approval gate of other agent frameworks, one module per framework, each
needing its framework (an optional extra): `langgraph`, `openai_agents`, `pydantic_ai`.
Each turns the framework's paused tool calls into Signoff approvals and its decisions back
into the framework's resume shape; none fails open (no decision is a denial)."""
