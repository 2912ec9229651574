"""`switchboard project ...` (defined beside views, which own the route)."""

from __future__ import annotations

from navigator.commands.views import register_projects as register

__all__ = ["register"]
