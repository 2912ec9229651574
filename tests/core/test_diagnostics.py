"""Diagnostics from real toolchain output shapes: exact fields, stable signatures, and
nothing at all from output in no known shape."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.evidence.diagnostics import Severity, Toolchain, parse

PYTEST = """\
============================= FAILURES =============================
___________________________ test_parse ____________________________
    def test_parse():
>       assert parse("a") == 2
E       assert 1 == 2
tests/test_parser.py:12: AssertionError
===================== short test summary info ======================
FAILED tests/test_parser.py::test_parse - assert 1 == 2
ERROR tests/test_io.py - ModuleNotFoundError: No module named 'yaml'
================= 1 failed, 3 passed, 1 error in 0.42s =================
"""

TRACEBACK = """\
Traceback (most recent call last):
  File "/src/app/main.py", line 40, in <module>
    run()
  File "/src/app/cli.py", line 7, in run
    value = int(text)
            ^^^^^^^^^
ValueError: invalid literal for int() with base 10: 'x'
"""

GCC = """\
src/lexer.c: In function 'next_token':
src/lexer.c:42:13: error: 'tok' undeclared (first use in this function)
src/lexer.c:50:5: warning: unused variable 'n' [-Wunused-variable]
"""

TSC = """\
src/app.ts(10,5): error TS2322: Type 'string' is not assignable to type 'number'.
src/util.ts:3:1 - error TS2304: Cannot find name 'foo'.
"""

ESLINT = """\

/home/me/web/src/index.js
  3:7   error    'unused' is assigned a value but never used  no-unused-vars
  9:1   warning  Unexpected console statement                 no-console

\u2716 2 problems (1 error, 1 warning)
"""

RUFF_CONCISE = "core/x.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.\n"
RUFF_FULL = """\
F401 [*] `os` imported but unused
 --> core/x.py:1:8
  |
1 | import os
  |        ^^
"""

MYPY = ('core/engine/engine.py:120: error: Incompatible return value type (got "int", '
        'expected "str")  [return-value]\n'
        'core/engine/engine.py:130:9: note: Revealed type is "builtins.int"\n'
        "Found 1 error in 1 file (checked 3 source files)\n")

GO_BUILD = "# example.com/app\n./main.go:10:5: undefined: foo\n"
GO_TEST = """\
--- FAIL: TestAdd (0.00s)
    add_test.go:12: got 3, want 4
FAIL
"""

CARGO = """\
error[E0308]: mismatched types
  --> src/main.rs:4:18
   |
4  |     let x: u32 = "a";
   |                  ^^^ expected `u32`, found `&str`
warning: unused variable: `y`
 --> src/lib.rs:2:9
"""


def _one(output: str):
    found = parse(output)
    assert len(found) == 1, found
    return found[0]


def test_pytest_summary_lines() -> None:
    failed, error = parse(PYTEST)
    assert (failed.toolchain, failed.file, failed.code, failed.message) == (
        Toolchain.PYTEST, "tests/test_parser.py", "test_parse", "assert 1 == 2")
    assert (error.file, error.code) == ("tests/test_io.py", None)
    assert "ModuleNotFoundError" in error.message


def test_python_traceback_names_the_innermost_frame() -> None:
    d = _one(TRACEBACK)
    assert (d.toolchain, d.file, d.line, d.code) == (Toolchain.PYTHON, "/src/app/cli.py", 7,
                                                      "ValueError")
    assert d.message.startswith("invalid literal for int()")


def test_gcc_errors_and_warnings() -> None:
    error, warning = parse(GCC)
    assert (error.file, error.line, error.column, error.severity) == (
        "src/lexer.c", 42, 13, Severity.ERROR)
    assert (warning.severity, warning.code) == (Severity.WARNING, "-Wunused-variable")
    assert warning.message == "unused variable 'n'"


def test_tsc_both_formats() -> None:
    paren, pretty = parse(TSC)
    assert (paren.file, paren.line, paren.column, paren.code) == ("src/app.ts", 10, 5, "TS2322")
    assert (pretty.file, pretty.line, pretty.code) == ("src/util.ts", 3, "TS2304")


def test_eslint_stylish() -> None:
    error, warning = parse(ESLINT)
    assert (error.file, error.line, error.column, error.code) == (
        "/home/me/web/src/index.js", 3, 7, "no-unused-vars")
    assert warning.severity is Severity.WARNING and warning.code == "no-console"


def test_ruff_concise_and_full_give_one_signature() -> None:
    concise, full = _one(RUFF_CONCISE), _one(RUFF_FULL)
    assert (concise.file, concise.line, concise.column, concise.code) == ("core/x.py", 1, 8,
                                                                          "F401")
    assert (full.file, full.line, full.code) == ("core/x.py", 1, "F401")
    assert concise.semantic_signature == full.semantic_signature


def test_mypy_with_and_without_column() -> None:
    error, note = parse(MYPY)
    assert (error.toolchain, error.file, error.line, error.column, error.code) == (
        Toolchain.MYPY, "core/engine/engine.py", 120, None, "return-value")
    assert note.severity is Severity.NOTE and note.column == 9


def test_go_build_and_test() -> None:
    build = _one(GO_BUILD)
    assert (build.file, build.line, build.message) == ("./main.go", 10, "undefined: foo")
    test = _one(GO_TEST)
    assert (test.code, test.file, test.line, test.message) == ("TestAdd", "add_test.go", 12,
                                                               "got 3, want 4")


def test_cargo_errors_with_codes() -> None:
    error, warning = parse(CARGO)
    assert (error.code, error.file, error.line, error.column) == ("E0308", "src/main.rs", 4,
                                                                  18)
    assert error.message == "mismatched types"
    assert warning.severity is Severity.WARNING and warning.file == "src/lib.rs"


def test_the_same_failure_moved_or_reprinted_keeps_its_signature() -> None:
    first = _one(TRACEBACK)
    moved = _one(TRACEBACK.replace("line 7", "line 19"))
    assert first.semantic_signature == moved.semantic_signature
    a = _one("src/a.c:10:2: error: object at 0x7ffd1234 freed twice")
    b = _one("src/a.c:88:2: error: object at 0x55aa9910 freed twice")
    assert a.semantic_signature == b.semantic_signature
    other_message = _one("src/a.c:10:2: error: object freed once")
    other_file = _one("src/b.c:10:2: error: object at 0x7ffd1234 freed twice")
    assert len({a.semantic_signature, other_message.semantic_signature,
                other_file.semantic_signature}) == 3


def test_output_in_no_known_shape_yields_nothing() -> None:
    for text in ("", "all good\n", "Compiling widget v0.1.0\n    Finished dev",
                 "error: something went wrong", "12 passed in 0.3s",
                 "main.go is fine: 3 files", "Traceback (most recent call last):\n"):
        assert parse(text) == [], text


@given(st.text(max_size=400))
def test_arbitrary_text_never_raises_and_is_bounded(text: str) -> None:
    found = parse(text)
    assert len(found) <= 200
    assert all(d.message and len(d.message) <= 500 for d in found)
