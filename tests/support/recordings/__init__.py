"""What each recording in tests/data means, as the dialect tests check it (one module a dialect).

The dialect tests check their recordings with these; `rxstream replay` is checked against the
same tables.
"""

from __future__ import annotations

import hashlib


def sha(text: str) -> str:
    """The first 12 hex digits of `text`'s SHA-256: a long recorded text, checked in a line."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
