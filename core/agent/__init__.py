"""The agent tools and the MCP server that offers them to Claude Code and Codex."""
