"""User-facing errors.

Every mistake a user can make (bad scenario, bad trace, bad flag) ends as one :class:`InputError`,
which the CLI prints as one line ``error: <file>: <field>: <what is wrong>`` and exit code 2.
"""

from __future__ import annotations

import re

# serde_json ends its messages with a position in the JSON document that the front end generated,
# which means nothing to someone who wrote TOML.
_JSON_POSITION = re.compile(r"\s+at line \d+ column \d+$")


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with its white space (newlines included) folded to single spaces, cut to ``limit``
    characters with "..." when given: a message from a library fit for one error line."""
    text = " ".join(str(text).split())
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


class InputError(Exception):
    """Bad input, located by file (or flag) and dotted field path; either may be empty."""

    def __init__(self, file: str, field: str, message: str):
        super().__init__(message)
        self.file = str(file) if file else ""
        self.field = field or ""
        self.message = message

    def line(self) -> str:
        """The one line the CLI prints."""
        parts = [p for p in (self.file, self.field, self.message) if p]
        return "error: " + ": ".join(" ".join(p.split()) for p in parts)

    def __str__(self) -> str:  # pragma: no cover - same text as line(), without the prefix
        return self.line()[len("error: "):]


def from_core(exc: BaseException, file: str) -> InputError | None:
    """Translate a ``_core.ConfigError`` / ``_core.TraceError`` into an :class:`InputError`.

    Duck-typed on the attributes (``field`` / ``path`` + ``line``) so that it also works when the
    extension is replaced by a test double. Returns None for anything else.
    """
    message = getattr(exc, "message", None) or str(exc)
    if hasattr(exc, "path") and hasattr(exc, "line"):
        line = getattr(exc, "line")
        return InputError(getattr(exc, "path") or file, f"line {line}" if line else "", message)
    if hasattr(exc, "field"):
        return InputError(file, getattr(exc, "field") or "", _JSON_POSITION.sub("", message))
    return None
