"""Diagnostics from command output: what failed, where, with a stable signature.

A person coming back to a frame asks "what failed?". Agents run the common
toolchains through their shell tool, and those print failures in well-known
line shapes; this module turns such output into ``Diagnostic`` records.

Two promises, both tested:

- **Never a wrong one.** Only exact, anchored shapes are recognised; output in
  no known shape yields nothing (an empty list says "unknown", never "clean").
- **Stable signatures.** The same failure in two runs has the same
  ``semantic_signature``: it hashes the toolchain, the code, the file and the
  message with volatile parts (line numbers, addresses, durations, counts)
  folded, so a failure that moved a few lines, or printed another memory
  address, is still recognised as the same one; a different message, code or
  file is a different failure.

Pure functions only: no I/O, no imports of the engine; the hook's detached
evidence writer calls ``parse`` on bounded text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import NamedTuple

from core.model.digest import sha256_hex

MAX_DIAGNOSTICS = 200
MAX_MESSAGE_CHARS = 500


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class Toolchain(StrEnum):
    PYTEST = "pytest"
    PYTHON = "python"
    GCC = "gcc"  # gcc and clang share the shape
    TSC = "tsc"
    ESLINT = "eslint"
    RUFF = "ruff"
    MYPY = "mypy"
    GO = "go"
    CARGO = "cargo"


_LANGUAGE = {
    Toolchain.PYTEST: "python", Toolchain.PYTHON: "python", Toolchain.RUFF: "python",
    Toolchain.MYPY: "python", Toolchain.GCC: "c", Toolchain.TSC: "typescript",
    Toolchain.ESLINT: "javascript", Toolchain.GO: "go", Toolchain.CARGO: "rust",
}


class Diagnostic(NamedTuple):
    toolchain: Toolchain
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    code: str | None = None

    @property
    def language(self) -> str:
        return _LANGUAGE[self.toolchain]

    @property
    def semantic_signature(self) -> str:
        """sha256 over what identifies the failure, not where it printed this time."""
        parts = (self.toolchain.value, self.code or "", self.file or "",
                 normalize_message(self.message))
        return sha256_hex("\x1f".join(parts).encode("utf-8"))


class _Lazy:
    """A pattern compiled on its first use: the hook parses a small output inline,
    and compiling every toolchain's patterns at import was most of that cost."""

    __slots__ = ("_source", "_compiled")

    def __init__(self, source: str) -> None:
        self._source = source
        self._compiled: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source)
        return self._compiled

    def match(self, text: str) -> re.Match[str] | None:
        return self.pattern.match(text)

    def sub(self, replacement: str, text: str) -> str:
        return self.pattern.sub(replacement, text)


_VOLATILE = (
    (_Lazy(r"0x[0-9a-fA-F]+"), "0x#"),
    (_Lazy(r"\b\d+(\.\d+)?\s*(ms|s|sec|seconds)\b"), "# s"),
    (_Lazy(r"\bline \d+\b"), "line #"),
    (_Lazy(r"(?<![\w.])\d+(?![\w.])"), "#"),
)


def normalize_message(message: str) -> str:
    text = " ".join(message.split())
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def _clip(message: str) -> str:
    message = message.strip()
    return message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS - 1] + "…"


def _int(value: str | None) -> int | None:
    return int(value) if value else None


# --------------------------------------------------------------------------- shapes

_PYTEST_FAILED = _Lazy(
    r"^(?:FAILED|ERROR) (?P<file>[^\s:]+\.py)(?:::(?P<test>\S+))?(?: - (?P<msg>.*))?$")
_PYTHON_FRAME = _Lazy(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in .*)?$')
_PYTHON_EXC = _Lazy(r"^(?P<code>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|"
                    r"Warning|Failure))(?:: (?P<msg>.*))?$")
_GCC = _Lazy(r"^(?P<file>[^\s:][^:]*\.(?:c|cc|cpp|cxx|h|hpp|m|mm)):(?P<line>\d+):"
             r"(?P<col>\d+): (?P<sev>fatal error|error|warning|note): (?P<msg>.*?)"
             r"(?: \[(?P<code>-W[\w=-]+)\])?$")
_TSC_PAREN = _Lazy(r"^(?P<file>[^\s(][^(]*\.(?:ts|tsx|mts|cts))\((?P<line>\d+),"
                   r"(?P<col>\d+)\): (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$")
_TSC_PRETTY = _Lazy(r"^(?P<file>[^\s:][^:]*\.(?:ts|tsx|mts|cts)):(?P<line>\d+):"
                    r"(?P<col>\d+) - (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$")
_ESLINT_FILE = _Lazy(r"^(?P<file>/\S+\.(?:js|jsx|ts|tsx|mjs|cjs|vue))$")
_ESLINT_ROW = _Lazy(r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<sev>error|warning)\s+"
                    r"(?P<msg>.+?)\s{2,}(?P<code>[@\w/-]+)$")
_RUFF_CONCISE = _Lazy(r"^(?P<file>[^\s:][^:]*\.pyi?):(?P<line>\d+):(?P<col>\d+): "
                      r"(?P<code>[A-Z]{1,4}\d{2,4})(?: \[\*\])? (?P<msg>.*)$")
_RUFF_FULL_HEAD = _Lazy(r"^(?P<code>[A-Z]{1,4}\d{2,4})(?: \[\*\])? (?P<msg>.+)$")
_RUFF_FULL_AT = _Lazy(r"^\s*--> (?P<file>[^\s:][^:]*\.pyi?):(?P<line>\d+):(?P<col>\d+)$")
_MYPY = _Lazy(r"^(?P<file>[^\s:][^:]*\.pyi?):(?P<line>\d+):(?:(?P<col>\d+):)? "
              r"(?P<sev>error|warning|note): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$")
_GO_BUILD = _Lazy(r"^(?P<file>[^\s:][^:]*\.go):(?P<line>\d+):(?P<col>\d+): (?P<msg>.*)$")
_GO_FAIL = _Lazy(r"^--- FAIL: (?P<test>\S+) \([\d.]+s\)$")
_GO_TEST_LINE = _Lazy(r"^\s+(?P<file>[^\s:]+_test\.go):(?P<line>\d+): (?P<msg>.*)$")
_CARGO_HEAD = _Lazy(r"^(?P<sev>error|warning)(?:\[(?P<code>E\d{4})\])?: (?P<msg>.+)$")
_CARGO_AT = _Lazy(r"^\s*--> (?P<file>[^\s:][^:]*\.rs):(?P<line>\d+):(?P<col>\d+)$")

_SEVERITY = {"error": Severity.ERROR, "fatal error": Severity.ERROR,
             "warning": Severity.WARNING, "note": Severity.NOTE}


def _pytest(lines: list[str]) -> Iterator[Diagnostic]:
    for line in lines:
        m = _PYTEST_FAILED.match(line)
        if m:
            message = m["msg"] or ("test failed" if line.startswith("FAILED") else
                                   "error collecting or running the test")
            code = m["test"]
            yield Diagnostic(Toolchain.PYTEST, Severity.ERROR, _clip(message), file=m["file"],
                             code=code)


def _python(lines: list[str]) -> Iterator[Diagnostic]:
    """A traceback: the innermost frame and the exception line that ends it."""
    for index, line in enumerate(lines):
        if line != "Traceback (most recent call last):":
            continue
        frame: re.Match[str] | None = None
        for follow in lines[index + 1:]:
            m = _PYTHON_FRAME.match(follow)
            if m:
                frame = m
                continue
            if follow.startswith("    ") or follow.strip().startswith("^"):
                continue  # the source line under a frame, or its caret marker
            exc = _PYTHON_EXC.match(follow)
            if exc and frame is not None:
                yield Diagnostic(Toolchain.PYTHON, Severity.ERROR,
                                 _clip(exc["msg"] or exc["code"]), file=frame["file"],
                                 line=int(frame["line"]), code=exc["code"])
            break


def _simple(pattern: _Lazy, toolchain: Toolchain,
            default: Severity = Severity.ERROR) -> Callable[[list[str]], Iterator[Diagnostic]]:
    def parse(lines: list[str]) -> Iterator[Diagnostic]:
        for line in lines:
            m = pattern.match(line)
            if m is None:
                continue
            groups = m.groupdict()
            severity = _SEVERITY.get(groups.get("sev") or "", default)
            yield Diagnostic(toolchain, severity, _clip(m["msg"]), file=m["file"],
                             line=_int(m["line"]), column=_int(groups.get("col")),
                             code=groups.get("code"))
    return parse


def _eslint(lines: list[str]) -> Iterator[Diagnostic]:
    current: str | None = None
    for line in lines:
        head = _ESLINT_FILE.match(line)
        if head:
            current = head["file"]
            continue
        if not line.strip():
            current = None
            continue
        row = _ESLINT_ROW.match(line)
        if row and current:
            yield Diagnostic(Toolchain.ESLINT, _SEVERITY[row["sev"]], _clip(row["msg"]),
                             file=current, line=int(row["line"]), column=int(row["col"]),
                             code=row["code"])


def _headed(head: _Lazy, at: _Lazy, toolchain: Toolchain,
            ) -> Callable[[list[str]], Iterator[Diagnostic]]:
    """Message line first, location on a following ``--> file:line:col`` line (rustc, ruff)."""
    def parse(lines: list[str]) -> Iterator[Diagnostic]:
        for index, line in enumerate(lines):
            m = head.match(line)
            if m is None:
                continue
            for follow in lines[index + 1:index + 4]:
                where = at.match(follow)
                if where:
                    groups = m.groupdict()
                    yield Diagnostic(toolchain, _SEVERITY.get(groups.get("sev") or "error",
                                                              Severity.ERROR),
                                     _clip(m["msg"]), file=where["file"],
                                     line=int(where["line"]), column=int(where["col"]),
                                     code=groups.get("code"))
                    break
    return parse


def _go_test(lines: list[str]) -> Iterator[Diagnostic]:
    """``--- FAIL: TestX (0.00s)`` followed by its indented ``file_test.go:N: msg`` lines."""
    for index, line in enumerate(lines):
        fail = _GO_FAIL.match(line)
        if fail is None:
            continue
        details = []
        for follow in lines[index + 1:]:
            detail = _GO_TEST_LINE.match(follow)
            if detail is None:
                break
            details.append(detail)
        if not details:
            yield Diagnostic(Toolchain.GO, Severity.ERROR, "test failed", code=fail["test"])
        for d in details:
            yield Diagnostic(Toolchain.GO, Severity.ERROR, _clip(d["msg"]), file=d["file"],
                             line=int(d["line"]), code=fail["test"])


_SEVERITY_WORDS = ("error: ", "warning: ", "note: ")
#: Each parser with the text one of whose lines any diagnostic of it must contain: a
#: parser none of whose words occurs in the output cannot yield, so it is skipped (and
#: its patterns never compiled). tests/core/test_diagnostics_triggers.py holds every
#: parser to its words.
_PARSERS: tuple[tuple[tuple[str, ...], Callable[[list[str]], Iterator[Diagnostic]]], ...] = (
    (("FAILED ", "ERROR "), _pytest),
    (("Traceback (most recent call last):",), _python),
    (_SEVERITY_WORDS, _simple(_GCC, Toolchain.GCC)),
    (("error TS", "warning TS"), _simple(_TSC_PAREN, Toolchain.TSC)),
    (("error TS", "warning TS"), _simple(_TSC_PRETTY, Toolchain.TSC)),
    (("error", "warning"), _eslint),
    ((".py",), _simple(_RUFF_CONCISE, Toolchain.RUFF)),
    (("--> ",), _headed(_RUFF_FULL_HEAD, _RUFF_FULL_AT, Toolchain.RUFF)),
    (_SEVERITY_WORDS, _simple(_MYPY, Toolchain.MYPY)),
    ((".go:",), _simple(_GO_BUILD, Toolchain.GO)),
    (("--- FAIL: ",), _go_test),
    (("--> ",), _headed(_CARGO_HEAD, _CARGO_AT, Toolchain.CARGO)),
)


def parse(output: str) -> list[Diagnostic]:
    """Every diagnostic recognised in ``output``, in order of parser then line, deduplicated
    by (signature, file, line, column); at most ``MAX_DIAGNOSTICS``."""
    lines = output.replace("\r\n", "\n").split("\n")
    seen: set[tuple[str, str | None, int | None, int | None]] = set()
    found: list[Diagnostic] = []
    for words, parser in _PARSERS:
        if not any(word in output for word in words):
            continue
        for diagnostic in parser(lines):
            key = (diagnostic.semantic_signature, diagnostic.file, diagnostic.line,
                   diagnostic.column)
            if key in seen:
                continue
            seen.add(key)
            found.append(diagnostic)
            if len(found) >= MAX_DIAGNOSTICS:
                return found
    return found
