"""OpenCode's usage read from its completed assistant-message records (issue 41).

The fixture is the file the launch's plugin wrote while OpenCode 1.18.33 answered
``OCTOOL please`` against the stand-in (two model requests: the bash call, then the
answer); the same records, byte for byte in their tokens and cost, were in its
``opencode.db`` ``message`` table.
"""

from __future__ import annotations

import json
from pathlib import Path

from core.model.usage import Tokens
from core.providers.opencode_usage import read_opencode
from core.usage.pricing import cost

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / \
    "opencode-1.18.33-usage.jsonl"


def _records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _line(record: dict) -> bytes:
    return json.dumps(record).encode() + b"\n"


def test_the_recorded_turn_counts_two_requests_of_its_model() -> None:
    data = FIXTURE.read_bytes()
    batch = read_opencode(data, {})
    assert batch.offset == len(data) and batch.bad_lines == 0
    assert list(batch.per_model) == ["claude-sonnet-4-5"]
    usage = batch.per_model["claude-sonnet-4-5"]
    assert usage.requests == 2
    assert usage.tokens == Tokens(input=2 * 1234, output=2 * 56, cache_read=2 * 789,
                                  cache_write=2 * 321)


def test_the_price_table_agrees_with_the_cost_opencode_states() -> None:
    for record in _records():
        one = read_opencode(_line(record), {}).per_model["claude-sonnet-4-5"]
        priced = cost("claude-sonnet-4-5", one.tokens, ())
        assert priced.usd is not None and abs(priced.usd - record["cost"]) < 1e-9


def test_a_record_seen_again_counts_only_what_it_grew_by() -> None:
    first = _records()[0]
    batch = read_opencode(_line(first), {})
    again = read_opencode(_line(first), batch.state)
    assert again.empty  # the same message, the same tokens: nothing new
    grown = {**first, "tokens": {**first["tokens"], "output": 100}}
    later = read_opencode(_line(grown), again.state)
    assert later.per_model["claude-sonnet-4-5"].tokens == Tokens(output=44)
    assert later.per_model["claude-sonnet-4-5"].requests == 0


def test_reasoning_is_part_of_output_as_switchboard_counts_it() -> None:
    record = {**_records()[0], "tokens": {"input": 10, "output": 20, "reasoning": 5,
                                          "cache": {"read": 0, "write": 0}}}
    usage = read_opencode(_line(record), {}).per_model["claude-sonnet-4-5"]
    assert usage.tokens == Tokens(input=10, output=25, reasoning=5)


def test_streaming_user_and_bad_records_count_nothing_and_the_rest_is_read() -> None:
    good = _records()[1]
    streaming = {**good, "id": "msg_x", "time": {"created": 1}}
    user = {"id": "msg_u", "role": "user", "time": {"created": 1}}
    negative = {**good, "id": "msg_n", "tokens": {"input": -1}}
    data = b"not json\n" + _line(streaming) + _line(user) + _line(negative) + _line(good) \
        + b'{"partial": '
    batch = read_opencode(data, {})
    assert batch.bad_lines == 2  # the non-JSON line and the negative count
    assert batch.per_model["claude-sonnet-4-5"].requests == 1
    assert batch.offset == len(data) - len(b'{"partial": ')  # the unfinished line waits
