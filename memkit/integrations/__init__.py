"""memkit in other frameworks: an MCP server (``mcp.py``); each imports its framework only when used."""
