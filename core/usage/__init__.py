"""Token usage, cost estimates and usage limits of each agent (issue 26).

Read from the CLIs' own records (Claude Code's transcript, Codex's rollout file),
never guessed; stored per turn in the session's evidence file.
"""
