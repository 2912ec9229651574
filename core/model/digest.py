"""SHA-256 for the hook path without loading OpenSSL.

``hashlib`` loads the ``_hashlib`` OpenSSL binding on import, about 2 ms of
every hook process, for one digest of a capability token and one of the
config. CPython always builds its own SHA-256 in (``_sha2`` from 3.12,
``_sha256`` before); it gives the same digests. ``hashlib`` stays the fallback
for an interpreter built without it.
"""

from __future__ import annotations

import sys

try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import sha256  # type: ignore[assignment,unused-ignore]


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return str(sha256(data).hexdigest())
