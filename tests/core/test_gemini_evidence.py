"""Gemini CLI's shell commands as session evidence (issue 41): its BeforeTool/AfterTool
of ``run_shell_command``, from the recording and from the result texts its shell tool
writes ("Exit Code" only when non-zero, "Error" and "Signal" when it says so)."""

from __future__ import annotations

import json
from pathlib import Path

from core.evidence.capture import Outcome, command_facts

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "gemini-0.61.0.tsv"


def _recorded(event: str) -> dict[str, object]:
    for line in RECORDING.read_text(encoding="utf-8").splitlines():
        name, payload = line.split("\t", 1)
        if name == event:
            return dict(json.loads(payload))
    raise AssertionError(f"no {event} in the recording")


def _after(text: str) -> dict[str, object]:
    document = _recorded("AfterTool")
    document["tool_response"] = {"llmContent": text, "returnDisplay": ""}
    return document


def test_the_recorded_command_starts_then_passes() -> None:
    started = command_facts("gemini", "BeforeTool", _recorded("BeforeTool"))
    assert started is not None and not started.finished
    assert (started.command, started.cwd) == ("touch standin-tooltest.txt", "/home/dev/src/demo")
    done = command_facts("gemini", "AfterTool", _recorded("AfterTool"))
    assert done is not None and done.finished
    assert (done.exit_code, done.exit_source, done.outcome) == (0, "gemini_result_text",
                                                                Outcome.PASSED)


def test_a_non_zero_exit_an_error_and_a_signal_fail() -> None:
    code = command_facts("gemini", "AfterTool", _after("Output: boom\nExit Code: 2\n"))
    assert code is not None and (code.exit_code, code.outcome) == (2, Outcome.FAILED)
    error = command_facts("gemini", "AfterTool", _after("Output: (empty)\nError: spawn ENOENT"))
    assert error is not None and (error.exit_code, error.outcome) == (None, Outcome.FAILED)
    killed = command_facts("gemini", "AfterTool", _after("Output: x\nSignal: 9"))
    assert killed is not None and killed.interrupted and killed.outcome is Outcome.FAILED


def test_no_result_text_is_unknown_and_other_tools_are_no_command() -> None:
    bare = command_facts("gemini", "AfterTool", _after(""))
    assert bare is not None and bare.outcome is Outcome.UNKNOWN
    other = dict(_recorded("BeforeTool"), tool_name="read_file")
    assert command_facts("gemini", "BeforeTool", other) is None
