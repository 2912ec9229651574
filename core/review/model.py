"""The review's own records, below both the diff reader and the review operations."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReviewComment:
    comment_id: str
    path: str
    line: int
    text: str
    line_text: str
    created_at: int
    sent: bool
    resolved: bool
    message_id: int | None = None

    @property
    def state(self) -> str:
        return "resolved" if self.resolved else "sent" if self.sent else "draft"
