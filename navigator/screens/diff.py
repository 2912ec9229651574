"""The diff screen (v): what a frame changed, file by file, with review comments.

Given an already-read FrameDiff (the app reads it in a worker through the
ReviewClient), so opening it never runs git on the event loop. The file list
shows +/- counts; the body (``DiffView``) every hunk with syntax colour. ``c``
writes a comment on the cursor's line, ``s`` sends every draft as one message
to the frame's agent, ``o`` hands the change to ``git difftool`` (when the
person configured a diff tool) or ``$PAGER``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from core.model.errors import SwitchboardError
from core.review.client import ReviewClient
from core.review.diff import FileStatus, FrameDiff, LineKind, patch_text
from navigator.screens.compose import OneLineScreen
from navigator.screens.session_detail import open_in_pager
from navigator.widgets.diff_view import DiffView, RowKind, safe
from navigator.widgets.fields import Field

STATUS_MARK = {FileStatus.ADDED: "A", FileStatus.DELETED: "D", FileStatus.MODIFIED: "M",
               FileStatus.RENAMED: "R", FileStatus.UNTRACKED: "?"}


class CommentScreen(OneLineScreen):
    """One line of review text for ``path:line``; None when cancelled."""

    EMPTY_TEXT = "Type the comment first."

    def __init__(self, where: str, line_text: str) -> None:
        super().__init__()
        self.where = where
        self.line_text = line_text

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(Text(f"Comment on {safe(self.where)}"), id="heading")  # no markup
            yield Static(Text(safe(self.line_text), style="dim", no_wrap=True,
                              overflow="ellipsis"))
            yield Field(placeholder="what should change here", id="text")
            yield Label("", id="problem", classes="problem")
            with Horizontal(classes="buttons"):
                yield Button("Add", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")



def file_option(diff: FrameDiff, index: int) -> Option:
    file = diff.files[index]
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{STATUS_MARK[file.status]} ", style="bold")
    if file.binary:
        line.append("binary ", style="dim")
    else:
        line.append(f"+{file.added}", style="green")
        line.append(f" -{file.removed} ", style="red")
    line.append(safe(file.path))
    return Option(line, id=str(index))


class DiffScreen(ModalScreen[None]):
    """Read the change; comment; send the review."""

    DEFAULT_CSS = """
    DiffScreen { background: $background 60%; }
    DiffScreen #diff-frame { width: 100%; height: 100%; background: $surface; }
    DiffScreen #diff-heading { height: 1; text-style: bold; }
    DiffScreen #diff-files { height: auto; max-height: 6; border: none; padding: 0; }
    DiffScreen #diff-hint { height: 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape,q,v", "close", "Close"),
        Binding("c", "comment", "Comment"),
        Binding("s", "send", "Send review"),
        Binding("d", "delete_draft", "Delete draft", show=False),
        Binding("o", "open_external", "Open"),
        Binding("tab", "switch_panel", "Files/diff", show=False),
    ]

    def __init__(self, diff: FrameDiff, review: ReviewClient | None = None) -> None:
        super().__init__()
        self.diff = diff
        self.review = review

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-frame"):
            yield Label(self._heading(), id="diff-heading")
            yield OptionList(*self._file_options(), id="diff-files")
            yield DiffView(id="diff-body")
            yield Label(self._hint(), id="diff-hint")

    def on_mount(self) -> None:
        body = self.query_one(DiffView)
        body.set_diff(self.diff)
        body.focus()

    # ------------------------------------------------------------------ text

    def _heading(self) -> Text:
        diff = self.diff
        text = Text(f"Diff of “{safe(diff.title)}”: ", no_wrap=True, overflow="ellipsis")
        if diff.problem:
            text.append(safe(diff.problem), style="yellow")
            return text
        text.append(f"{len(diff.files)} file(s) ")
        text.append(f"+{diff.added}", style="green")
        text.append(f" -{diff.removed}", style="red")
        if diff.base_ref:
            text.append(f" since {diff.base_ref[:8]}", style="dim")
        if diff.truncated:
            text.append(" (cut: too large)", style="yellow")
        return text

    def _hint(self) -> str:
        drafts = sum(1 for c in self.diff.comments if c.state == "draft")
        sent = f"s send {drafts}" if drafts else "s send"
        return f"↑↓ line · n/p hunk · ]/[ file · c comment · d delete · {sent} · o open · esc"

    def _file_options(self) -> list[Option]:
        if not self.diff.files:
            return [Option(Text("no changes since the base" if not self.diff.problem
                                else "no diff", style="dim"), disabled=True)]
        return [file_option(self.diff, i) for i in range(len(self.diff.files))]

    def show_diff(self, diff: FrameDiff) -> None:
        """New comments or a new read: same cursor, new rows."""
        self.diff = diff
        self.query_one("#diff-heading", Label).update(self._heading())
        self.query_one("#diff-hint", Label).update(self._hint())
        self.query_one(DiffView).set_diff(diff, keep_cursor=True)

    # ------------------------------------------------------------------ events

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            body = self.query_one(DiffView)
            body.go_to_file(int(event.option.id))
            body.focus()

    def on_diff_view_cursor_moved(self, message: DiffView.CursorMoved) -> None:
        files = self.query_one("#diff-files", OptionList)
        if files.option_count and files.highlighted != message.file_index and \
                not files.has_focus and self.diff.files:
            files.highlighted = message.file_index

    def action_switch_panel(self) -> None:
        files = self.query_one("#diff-files", OptionList)
        (self.query_one(DiffView) if files.has_focus else files).focus()

    # ------------------------------------------------------------------ actions

    def action_comment(self) -> None:
        body = self.query_one(DiffView)
        row = body.row_at_cursor()
        line = row.line if row is not None else None
        if row is None or row.kind not in (RowKind.LINE, RowKind.COMMENT) or line is None \
                or line.new_no is None or line.kind is LineKind.REMOVED:
            self.notify("Put the cursor on a line the file has now (+ or context) to comment "
                        "on it.", severity="warning", markup=False)
            return
        if self.review is None:
            self.notify("Comments need the navigator's review client.", severity="warning")
            return
        path = self.diff.files[row.file_index].path
        number = line.new_no

        def answered(text: str | None) -> None:
            if text:
                self._in_worker(lambda: self._comment_and_read(path, number, text),
                                self.show_diff)

        self.app.push_screen(CommentScreen(f"{path}:{number}", line.text), answered)

    def _comment_and_read(self, path: str, line: int, text: str) -> FrameDiff:
        assert self.review is not None
        self.review.comment(self.diff.frame_id, path, line, text)
        return self.review.frame_diff(self.diff.frame_id)

    def action_delete_draft(self) -> None:
        """d on a draft comment's row: it goes (a sent one is the agent's record too)."""
        row = self.query_one(DiffView).row_at_cursor()
        comment = row.comment if row is not None else None
        if comment is None or comment.state != "draft" or self.review is None:
            self.notify("Put the cursor on a draft comment (✎) to delete it.",
                        severity="warning", markup=False)
            return
        review = self.review

        def delete() -> FrameDiff:
            review.delete_draft(comment.comment_id)
            return review.frame_diff(self.diff.frame_id)

        self._in_worker(delete, self.show_diff)

    def action_send(self) -> None:
        if self.review is None:
            return
        if not any(c.state == "draft" for c in self.diff.comments):
            self.notify("No draft comments: press c on a line first.", severity="warning")
            return
        review = self.review

        def send() -> tuple[Any, FrameDiff]:
            sent = review.send_review(self.diff.frame_id)
            return sent, review.frame_diff(self.diff.frame_id)

        def done(result: tuple[Any, FrameDiff]) -> None:
            sent, diff = result
            self.notify(f"Review sent as one message ({sent.comments} comment(s)): "
                        f"{safe(sent.delivery)}", title="Review", markup=False)
            self.show_diff(diff)

        self._in_worker(send, done)

    def _in_worker(self, work: Callable[[], Any], then: Callable[[Any], None]) -> None:
        """Off the event loop (git, SQLite, the broker); a refusal becomes a toast."""

        def run() -> None:
            try:
                result = work()
            except SwitchboardError as exc:
                self.app.call_from_thread(self.notify, exc.message, title="Review",
                                          severity="error", markup=False)
                return
            self.app.call_from_thread(then, result)

        self.run_worker(run, thread=True, group="review", exit_on_error=False)

    def action_open_external(self) -> None:
        """git difftool when the person set one in their global config (diff.tool), else
        the patch in $PAGER. The checkout's own config never chooses or defines the tool:
        the agent can write it (``core.model.git.difftool_call``)."""
        from core.model.git import difftool_call, person_difftool

        diff = self.diff
        if diff.base_ref is None:
            self.notify("Nothing to open: " + (diff.problem or "no diff"), severity="warning",
                        markup=False)
            return
        tool = person_difftool()
        if tool is not None:
            from textual.app import SuspendNotSupported

            try:
                call = difftool_call(diff.checkout, diff.base_ref, tool)
                with self.app.suspend():
                    subprocess.run(list(call.argv), env=call.env, check=False)
            except (SuspendNotSupported, OSError) as exc:
                self.notify(f"Could not hand over to git difftool ({exc}).", severity="error",
                            markup=False)
            return
        handle, path = tempfile.mkstemp(prefix="switchboard-diff-", suffix=".diff")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:  # mkstemp: mode 0600
                out.write(patch_text(diff))
            open_in_pager(self, [path])
        finally:
            os.unlink(path)

    def action_close(self) -> None:
        self.dismiss(None)

