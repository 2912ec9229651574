"""Reading a reset time out of a CLI's limit message (vocabulary of the hook and core.usage).

Claude Code states a plan's reset as ``...|EPOCH`` in its limit message; Codex says
"try again in 2 hours 5 minutes". Anything else states no reset time, and then none
is shown: a reset is never guessed.
"""

from __future__ import annotations

import re

_EPOCH = re.compile(r"\|(\d{10})\b")
_RETRY_IN = re.compile(
    r"try again in\s+(?:(?P<d>\d+)\s*days?)?[\s,]*(?:(?P<h>\d+)\s*h(?:ours?)?)?[\s,]*"
    r"(?:(?P<m>\d+)\s*m(?:in(?:utes?)?)?)?[\s,]*(?:(?P<s>\d+)\s*s(?:ec(?:onds?)?)?)?",
    re.I)


def reset_from_text(text: str, now_ms: int) -> int | None:
    """The reset time (epoch ms) a limit message states; None when it states none."""
    if match := _EPOCH.search(text):
        return int(match[1]) * 1000
    match = _RETRY_IN.search(text)
    if match and any(match.group(k) for k in "dhms"):
        seconds = sum(int(match.group(k) or 0) * factor
                      for k, factor in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)))
        return now_ms + seconds * 1000
    return None
