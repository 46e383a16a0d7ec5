"""The MCP server mounted at /mcp, a thin layer over the application services."""
