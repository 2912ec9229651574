"""CLI command groups, one module each; see navigator.cli.GROUPS."""
