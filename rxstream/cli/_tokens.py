"""Token counting for the command, without ever touching the network.

The encoding is loaded by the library's own loader (`rxstream.core.tokens.
resolve_encoding`): `o200k_base` and `cl100k_base` from the data the `tokens`
extra installs (the `cli` extra includes it), any other encoding only from what
tiktoken already has on disk. Nothing is downloaded, so the command works (and
never hangs) on a machine with no network; without an encoding it counts deltas
and says why in the footer.
"""

from __future__ import annotations

from typing import Any

from ..core.tokens import BUNDLED_ENCODINGS, DEFAULT_ENCODING, resolve_encoding
from ._hints import install_hint

__all__ = ["PREFERRED", "offline_encoding"]

#: Encodings to try when none is named, best first.
PREFERRED = (DEFAULT_ENCODING, *(name for name in BUNDLED_ENCODINGS if name != DEFAULT_ENCODING))

_HINT = f"for exact counts: {install_hint('tokens')}"


def offline_encoding(name: str | None = None) -> tuple[Any, str]:
    """A tiktoken encoding available offline, or None, and a note saying which (or why not).

    Args:
        name: the encoding (or model) wanted; None tries `PREFERRED`.

    Returns:
        `(encoding, note)`: the encoding (None when there is none) and a short
        note for the footer, e.g. `"o200k_base"` or `"tiktoken not installed: ..."`
        (for a `name` that cannot be loaded, why not: the command then fails).
    """
    try:
        import tiktoken  # noqa: F401  # only to tell a missing tiktoken apart
    except ImportError:
        return None, f"tiktoken not installed: {_HINT}"
    wanted = name or PREFERRED[0]
    for candidate in [name] if name is not None else PREFERRED:
        try:
            encoding = resolve_encoding(candidate)
        except ImportError:
            continue  # the data is not installed: try the next one
        except ValueError as exc:
            if name is not None:
                return None, str(exc)  # an unknown name, or one not on this machine
            continue
        return encoding, str(getattr(encoding, "name", candidate))
    return None, f"no offline copy of {wanted}: {_HINT}"
