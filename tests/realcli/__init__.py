"""The real-CLI tier: the pinned Claude Code and Codex CLIs against loopback model stand-ins."""
