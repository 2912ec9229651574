"""core.model.tokens makes the same shapes as ``secrets``, from the same source."""

from __future__ import annotations

import re
import secrets

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
