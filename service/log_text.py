"""Text as a log line may quote it: escaped so that one request is one line, read as sent."""

from __future__ import annotations

import re

from starlette.types import Scope

# C0 and C1 controls, the Unicode line and paragraph separators (a log reader that splits lines the Unicode way
# starts a line there) and the bidi controls (which reorder what a terminal shows), and the backslash
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\\]")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return "\\\\" if c == "\\" else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def loggable(text: str) -> str:
    """``text`` with control characters (CR, LF, ESC, U+2028, bidi controls: a forged line, terminal escapes, text
    shown reordered) and backslashes written as escapes, so that one request is one log line, read as sent."""
    return CONTROL.sub(_escape, text)


def logged_path(scope: Scope) -> str:
    """The path as the client sent it (still percent-encoded: %0d%0a stays text), its controls escaped."""
    raw = scope.get("raw_path")
    return loggable(raw.decode("latin-1") if isinstance(raw, bytes) else scope["path"])
