"""What a token counter accepts as an encoding, and the object it counts with.

Input: an `EncodingSpec`: a tiktoken `Encoding`, an encoding or model name,
any callable `str -> tokens`, or None (`DEFAULT_ENCODING`). Output: the
tiktoken `Encoding` or the callable, ready to count with.

Invariants: names are looked up by `rxstream._encodings` (below the core: the
one place that reads tokenizer data and keeps tiktoken offline); this module
only dispatches on the kind of spec, opens no file and never touches the
network. A wrong kind is a `TypeError` that names the type that arrived.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from ..._encodings import TiktokenEncoding, encoding_by_name

__all__ = ["DEFAULT_ENCODING", "EncodingSpec", "resolve_encoding"]

#: The encoding used when none is given (GPT-4o and later models).
DEFAULT_ENCODING = "o200k_base"

#: What `TokenCounter` and `count_tokens` accept as an encoding.
EncodingSpec: TypeAlias = "TiktokenEncoding | str | Callable[[str], Sequence[object]] | None"


def resolve_encoding(
    encoding: EncodingSpec = None,
) -> TiktokenEncoding | Callable[[str], Sequence[object]]:
    """Turn an encoding spec into a tiktoken `Encoding` or a plain callable.

    Names never touch the network: `"o200k_base"` and `"cl100k_base"` (and
    the models that use them) load from the data the `tokens` extra installs;
    any other encoding name loads only if tiktoken already has it on disk (in
    its cache, or from a plugin package that bundles it). `"o200k_harmony"`
    (gpt-oss), when not on disk, counts with the shipped `o200k_base`: the two
    differ only in special tokens, which counting never uses.

    Args:
        encoding: a tiktoken `Encoding`; an encoding name (`"o200k_base"`) or a
            model name (`"gpt-4o"`); any callable from `str` to a sequence of tokens (ids, or
            strings like `str.split` gives: only their number counts); or None
            for `DEFAULT_ENCODING`.

    Returns:
        The `Encoding` or the callable, ready to count with.

    Raises:
        ImportError: a name was given and tiktoken, or the encoding's data, is
            not installed (the message names the fix: `pip install "rxstream[tokens]"`).
        ValueError: no encoding or model has that name, or the encoding is
            neither installed nor on disk (the message says what to do).
        TypeError: `encoding` is none of the above.

    >>> resolve_encoding(str.split)("two words")
    ['two', 'words']
    """
    if encoding is None:
        encoding = DEFAULT_ENCODING
    if isinstance(encoding, str):
        return encoding_by_name(encoding)
    if _is_tiktoken(encoding):
        return encoding
    if callable(encoding):
        return encoding
    raise TypeError(
        "encoding must be a tiktoken Encoding, an encoding or model name, a callable "
        f"str -> list[int], or None; got {type(encoding).__name__}"
    )


def _is_tiktoken(encoding: object) -> bool:
    return hasattr(encoding, "encode_ordinary") and isinstance(
        getattr(encoding, "_pat_str", None), str
    )
