"""A terminal driver whose input thread sleeps until a key arrives.

Textual's Linux driver wakes its input thread ten times a second to see
whether a lone escape has waited long enough to be a key. That wake was the
whole idle cost of a navigator once its own polling was gone (2 ms of CPU a
second each, 20 navigators: 4% of a core doing nothing). This driver asks the
parser: with a partial sequence pending it waits exactly until the parser's
deadline, otherwise until input comes or the driver stops (a pipe it writes
to, so the thread never needs a timeout to notice). Everything else is
Textual's own driver; the parsing loop mirrors ``LinuxDriver.run_input_thread``
(Textual 8.x).
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder

from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` without the input thread's 0.1 s wake-ups."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)

    def disable_input(self) -> None:
        """Stop the input thread: the pipe wakes it, then Textual's own stop runs."""
        try:
            os.write(self._wake_write, b"x")
        except OSError:
            pass
        super().disable_input()

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_read, 512):
                pass
        except OSError:
            pass

    def run_input_thread(self) -> None:
        """Wait for input (or the parser's escape deadline, or the stop) and dispatch."""
        self._drain_wake()  # a stop from an earlier run (suspend and resume)
        selector = selectors.DefaultSelector()
        fileno = self.fileno
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        feed, tick = parser.feed, parser.tick
        decode = getincrementaldecoder("utf-8")().decode

        def timeout() -> float | None:
            deadline = parser._timeout_time
            return None if deadline is None else max(0.0, deadline - get_time())

        def process(events: list[tuple[selectors.SelectorKey, int]],
                    final: bool = False) -> None:
            for index, (key, mask) in enumerate(events):
                if key.fd != fileno or not mask & selectors.EVENT_READ:
                    continue
                last = index == len(events) - 1
                data = decode(os.read(fileno, 1024 * 4), final=final and last)
                if not data:
                    break  # stdin is piped and ended
                for event in feed(data):
                    self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(timeout()))
            selector.unregister(fileno)
            process(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass
