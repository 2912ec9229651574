"""core.model.tokens makes the same shapes as ``secrets``, from the same source."""

from __future__ import annotations

import base64
import os
import re
import secrets

import pytest

from core.model.tokens import token_hex, token_urlsafe


def test_token_shapes_match_secrets() -> None:
    for nbytes in (4, 16, 32):
        ours, theirs = token_urlsafe(nbytes), secrets.token_urlsafe(nbytes)
        assert len(ours) == len(theirs)
        assert re.fullmatch(r"[A-Za-z0-9_-]+", ours)
        assert re.fullmatch(f"[0-9a-f]{{{2 * nbytes}}}", token_hex(nbytes))


def test_tokens_do_not_repeat() -> None:
    assert len({token_urlsafe(16) for _ in range(200)}) == 200
    assert len({token_hex(8) for _ in range(200)}) == 200


def test_urlsafe_encoding_is_base64s(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw in (bytes(range(256))[:32], b"\xfb\xff\xfe" * 11, b"\x00"):
        monkeypatch.setattr(os, "urandom", lambda n, raw=raw: raw[:n])
        expected = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        assert token_urlsafe(len(raw)) == expected
        assert token_hex(len(raw)) == raw.hex()
