"""memkit in other frameworks: an MCP server (``mcp.py``) and LangGraph's long-term store (``langgraph.py``);
each imports its framework only when used."""
