"""Where Switchboard lives: config, home, registry, hooks install, projects,
worktrees, the demo and doctor."""
