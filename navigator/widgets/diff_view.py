"""The diff body: every file's hunks as rows, drawn a line at a time.

A ScrollView with the line API: only the rows on screen are rendered, and
syntax colour (rich's Pygments highlighting, by the file's name) is computed
per block of ``BLOCK`` rows the first time one of them shows. So a 5,000-line
change opens as fast as a 50-line one; the rows themselves are plain data
(``build_rows``), tested without a screen.

A cursor row (up/down, n/p for hunks, ]/[ for files) is what ``c`` comments
on; comments show under their line, marked draft, sent or resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from core.model.text import shown
from core.review.diff import DiffLine, FileDiff, FrameDiff, LineKind
from core.review.model import ReviewComment

BLOCK = 120
"""Rows highlighted together: the lexer sees enough context, the first paint stays cheap."""


class RowKind(StrEnum):
    FILE = "file"
    HUNK = "hunk"
    LINE = "line"
    COMMENT = "comment"
    NOTE = "note"


@dataclass(frozen=True)
class Row:
    kind: RowKind
    file_index: int
    text: str
    line: DiffLine | None = None
    comment: ReviewComment | None = None


def safe(text: str) -> str:
    """Agents' text as one printable line: tabs as spaces, every other control spelled out.

    ``str.isprintable`` (C speed) passes the common line as it is: it is False for every
    control, format (bidi) and separator character, which ``shown`` then spells out."""
    if text.isprintable():
        return text
    return shown(text.expandtabs(4))


#: What stands for a line break inside a one-row field (a prompt or a command of several
#: lines): a visible mark, where ``shown`` wrote a literal backslash-n.
LINE_BREAK = " ⏎ "


def one_line(text: str) -> str:
    """Agents' multi-line text (a prompt, a command, a snippet) on one row: each line made
    ``safe``, blank ones dropped, the rest joined by ``LINE_BREAK``."""
    if "\n" not in text and "\r" not in text:
        return safe(text)
    return LINE_BREAK.join(safe(part) for part in text.splitlines() if part.strip())


def build_rows(diff: FrameDiff) -> list[Row]:
    """The rows of the whole change, in order: file header, hunk headers, lines, comments.

    Every text is made printable here (``safe``), once, before colour or width."""
    by_line: dict[tuple[str, int], list[ReviewComment]] = {}
    for comment in diff.comments:
        by_line.setdefault((comment.path, comment.line), []).append(comment)
    rows: list[Row] = []
    for index, file in enumerate(diff.files):
        rows.append(Row(RowKind.FILE, index, safe(_file_title(file))))
        if file.binary:
            rows.append(Row(RowKind.NOTE, index, "binary file: no lines to show"))
        for hunk in file.hunks:
            rows.append(Row(RowKind.HUNK, index, safe(hunk.header)))
            for line in hunk.lines:
                if line.kind is LineKind.NOTE:
                    rows.append(Row(RowKind.NOTE, index, safe(line.text)))
                    continue
                rows.append(Row(RowKind.LINE, index, safe(line.text), line))
                if line.new_no is not None and line.kind is not LineKind.REMOVED:
                    for comment in by_line.pop((file.path, line.new_no), []):
                        rows.append(Row(RowKind.COMMENT, index, safe(comment.text), line,
                                        comment))
    return rows


def _file_title(file: FileDiff) -> str:
    counts = "binary" if file.binary else f"+{file.added} -{file.removed}"
    rename = f" (from {file.old_path})" if file.old_path else ""
    return f"{file.path}{rename}  {file.status.value} {counts}"


class DiffView(ScrollView, can_focus=True):
    """Data in: ``set_diff``; intent out: ``CommentRequested`` for the cursor's line."""

    COMPONENT_CLASSES = {"diff-view--file", "diff-view--hunk", "diff-view--added",
                         "diff-view--removed", "diff-view--gutter", "diff-view--cursor",
                         "diff-view--comment"}
    DEFAULT_CSS = """
    DiffView { height: 1fr; background: $surface; }
    DiffView > .diff-view--file { background: $primary 30%; text-style: bold; }
    DiffView > .diff-view--hunk { color: $accent; }
    DiffView > .diff-view--added { background: $success 18%; }
    DiffView > .diff-view--removed { background: $error 18%; }
    DiffView > .diff-view--gutter { color: $text-muted; }
    DiffView > .diff-view--cursor { background: $accent 35%; }
    DiffView > .diff-view--comment { color: $warning; text-style: italic; }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "move_page(-1)", "Page up", show=False),
        Binding("pagedown", "move_page(1)", "Page down", show=False),
        Binding("home", "move_to(0)", "Top", show=False),
        Binding("end", "move_to(-1)", "End", show=False),
        Binding("n", "hunk(1)", "Next hunk"),
        Binding("p", "hunk(-1)", "Previous hunk"),
        Binding("right_square_bracket", "file(1)", "Next file", key_display="]", show=False),
        Binding("left_square_bracket", "file(-1)", "Previous file", key_display="[",
                show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class CursorMoved(Message):
        def __init__(self, file_index: int) -> None:
            super().__init__()
            self.file_index = file_index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.diff: FrameDiff | None = None
        self.rows: list[Row] = []
        self._colour: dict[tuple[int, int], list[Text]] = {}
        self._file_rows: dict[int, list[int]] = {}
        self._gutter = 11

    # ------------------------------------------------------------------ data in

    def set_diff(self, diff: FrameDiff, *, keep_cursor: bool = False) -> None:
        old = self.cursor if keep_cursor else 0
        self.diff = diff
        self.rows = build_rows(diff)
        self._colour.clear()
        self._file_rows = {}
        for number, row in enumerate(self.rows):
            if row.kind in (RowKind.LINE, RowKind.COMMENT, RowKind.NOTE, RowKind.HUNK):
                self._file_rows.setdefault(row.file_index, []).append(number)
        widest = max((max(h.old_start, h.new_start) + len(h.lines) for f in diff.files
                      for h in f.hunks), default=1)
        digits = len(str(widest))
        self._gutter = digits * 2 + 3
        self.virtual_size = Size(self._gutter + 2 + max(
            (len(r.text) for r in self.rows), default=0), len(self.rows))
        self.cursor = min(old, max(0, len(self.rows) - 1))
        self.refresh()

    # ------------------------------------------------------------------ rows

    def row_at_cursor(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def _highlighted(self, row_number: int) -> Text:
        """The row's code with syntax colour, highlighted with its block of the file."""
        row = self.rows[row_number]
        assert self.diff is not None
        members = self._file_rows.get(row.file_index, [])
        # bisect-free: rows of one file are contiguous, so the offset is a subtraction
        offset = row_number - members[0] if members else 0
        block = offset // BLOCK
        key = (row.file_index, block)
        if key not in self._colour:
            chunk = members[block * BLOCK:(block + 1) * BLOCK]
            code = "\n".join(self.rows[n].text if self.rows[n].kind is RowKind.LINE else ""
                             for n in chunk)
            path = self.diff.files[row.file_index].path
            try:
                lexer = Syntax.guess_lexer(path, code)
                highlighted = Syntax(code, lexer, theme="ansi_dark").highlight(code)
                coloured = list(highlighted.split("\n", allow_blank=True))
            except Exception:  # an odd name or text: plain is still a diff
                coloured = [Text(self.rows[n].text) for n in chunk]
            self._colour[key] = coloured
        lines = self._colour[key]
        index = offset - block * BLOCK
        return lines[index].copy() if index < len(lines) else Text(row.text)

    def _row_text(self, number: int) -> tuple[Text, Style]:
        row = self.rows[number]
        style = Style()
        if row.kind is RowKind.FILE:
            return Text(" " + row.text), self.get_component_rich_style("diff-view--file")
        if row.kind is RowKind.HUNK:
            return Text(row.text), self.get_component_rich_style("diff-view--hunk")
        if row.kind is RowKind.NOTE:
            return Text("  " + row.text, style="dim"), style
        if row.kind is RowKind.COMMENT:
            comment = row.comment
            assert comment is not None
            mark = {"draft": "✎ draft", "sent": "➜ sent", "resolved": "✓ resolved"}[
                comment.state]
            text = Text(" " * self._gutter + f"└ {mark}: {row.text}")
            return text, self.get_component_rich_style("diff-view--comment")
        line = row.line
        assert line is not None
        digits = (self._gutter - 3) // 2
        old = str(line.old_no) if line.old_no is not None else ""
        new = str(line.new_no) if line.new_no is not None else ""
        mark = {LineKind.ADDED: "+", LineKind.REMOVED: "-"}.get(line.kind, " ")
        text = Text(f"{old:>{digits}} {new:>{digits}} ",
                    style=self.get_component_rich_style("diff-view--gutter"))
        text.append(f"{mark} ")
        text.append_text(self._highlighted(number))
        if line.kind is LineKind.ADDED:
            style = self.get_component_rich_style("diff-view--added")
        elif line.kind is LineKind.REMOVED:
            style = self.get_component_rich_style("diff-view--removed")
        return text, style

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y
        width = self.size.width
        if not 0 <= number < len(self.rows):
            return Strip.blank(width, self.rich_style)
        text, style = self._row_text(number)
        base = self.rich_style + style
        if number == self.cursor and self.has_focus:
            base += self.get_component_rich_style("diff-view--cursor")
        text.stylize_before(base)
        text.no_wrap = True
        segments = [Segment(s.text, s.style) for s in text.render(self.app.console)
                    if s.text != "\n"]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    # ------------------------------------------------------------------ moving

    def watch_cursor(self, old: int, new: int) -> None:
        self._show_cursor()
        row = self.row_at_cursor()
        if row is not None:
            self.post_message(self.CursorMoved(row.file_index))
        self.refresh()

    def _show_cursor(self) -> None:
        height = self.scrollable_content_region.height or self.size.height or 1
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def action_move(self, step: int) -> None:
        if self.rows:
            self.cursor = max(0, min(len(self.rows) - 1, self.cursor + step))

    def action_move_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 1))

    def action_move_to(self, where: int) -> None:
        if self.rows:
            self.cursor = where if where >= 0 else len(self.rows) - 1

    def _jump(self, kinds: tuple[RowKind, ...], direction: int) -> bool:
        numbers = range(self.cursor + 1, len(self.rows)) if direction > 0 \
            else range(self.cursor - 1, -1, -1)
        for number in numbers:
            if self.rows[number].kind in kinds:
                self.cursor = number
                self.scroll_to(y=number, animate=False, immediate=True)
                return True
        return False

    def action_hunk(self, direction: int) -> None:
        if not self._jump((RowKind.HUNK,), direction):
            self.notify("No more hunks that way.", timeout=2)

    def action_file(self, direction: int) -> None:
        if not self._jump((RowKind.FILE,), direction):
            self.notify("No more files that way.", timeout=2)

    def go_to_file(self, file_index: int) -> None:
        for number, row in enumerate(self.rows):
            if row.kind is RowKind.FILE and row.file_index == file_index:
                self.cursor = number
                self.scroll_to(y=number, animate=False, immediate=True)
                return
