"""The preview panel: what a parked agent last printed (read-only, on selection)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class PanePreview(Static):
    """Shown only while a parked agent's frame is selected; the app fills it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.border_title = "Preview"
        self.frame_id: str | None = None

    def show_lines(self, frame_id: str, title: str, lines: list[str]) -> None:
        self.frame_id = frame_id
        self.border_title = f"Preview: {title}"
        self.update(Text("\n".join(lines) if lines else "(nothing printed yet)",
                         no_wrap=True, overflow="ellipsis"))
        self.add_class("-visible")

    def clear(self) -> None:
        self.frame_id = None
        self.remove_class("-visible")
