"""The board as tools for agents: one table of tools (tools) and the MCP server over it (mcp)."""
