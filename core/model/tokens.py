"""Random tokens from the OS's CSPRNG, as ``secrets`` makes them, without its imports.

``secrets`` imports ``hmac`` and through it ``hashlib``, which in a navigator
(where OpenSSL is never loaded, see ``navigator.commands.ui``) loads every
built-in hash module: ~0.3 MB in the navigator that holds the host's reconcile
turn, for an engine owner tag and a view's desktop token. Both functions are
``os.urandom`` encoded exactly as ``secrets.token_hex`` / ``token_urlsafe`` do.
"""

from __future__ import annotations

import binascii
import os


def token_hex(nbytes: int) -> str:
    """``nbytes`` random bytes as lowercase hex (``secrets.token_hex``)."""
    return os.urandom(nbytes).hex()


def token_urlsafe(nbytes: int) -> str:
    """``nbytes`` random bytes, URL-safe Base64 without padding (``secrets.token_urlsafe``)."""
    text = binascii.b2a_base64(os.urandom(nbytes), newline=False)
    return text.replace(b"+", b"-").replace(b"/", b"_").rstrip(b"=").decode("ascii")
