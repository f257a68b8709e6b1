"""One runnable agent per stack, each gated by Signoff, each on a scripted model (no API key,
no network): start `signoff dev`, export the two variables it prints (SIGNOFF_URL and
SIGNOFF_API_TOKEN), run `python -m examples.stacks.<name>`, and approve (or edit, or
decline) the card that appears in the dev workspace; the agent then goes on.

    decorator     any Python function: @requires_signoff
    pydantic_ai   pydantic-ai: requires_approval -> DeferredToolRequests
    langgraph     LangChain's create_agent with HumanInTheLoopMiddleware
    openai_agents the OpenAI Agents SDK: needs_approval -> RunState
    mcp_client    an MCP server behind `signoff mcp` (with mcp_files_server)
"""
