"""Provider adapters: Claude Code and Codex as pure, registry-free building blocks.

Submodules are imported by name, never from here: ``core.providers.hooks`` runs
on every prompt and turn end and must not pay for ``subprocess`` or ``pathlib``
work that only launching and version probing need.
"""
