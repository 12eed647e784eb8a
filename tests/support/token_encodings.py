"""The encodings the token tests count with, and the text helpers they share.

`CL100K` and `O200K` are tiktoken's real encodings (the data the `tokens` extra installs: no
test touches the network); `R50K_TINY` and `O200K_TINY` small offline vocabularies under real
patterns (`tiny_encoding`); `NEW_CHAR` a character older Unicode tables leave unassigned;
`split_at` cuts a text at given positions, `no_surrogates` keeps texts tiktoken can encode.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import tiktoken

from rxstream.core.tokens import resolve_encoding

# The data the `tokens` extra installs: no test touches the network.
CL100K: tiktoken.Encoding = resolve_encoding("cl100k_base")  # type: ignore[assignment]
O200K: tiktoken.Encoding = resolve_encoding("o200k_base")  # type: ignore[assignment]

R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
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


def tiny_encoding(name: str, pat_str: str) -> tiktoken.Encoding:
    """A small offline vocabulary under a real tiktoken pattern (single bytes + a few merges)."""
    merges = [b"he", b"ll", b"llo", b"hello", b" w", b"or", b" wor", b"ld", b" world"]
    merges += [b"12", b"123", b"'s", b"'ll", b"\n\n", b"  ", b"   ", b"!!", b" 1", b"\r\n"]
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({m: 256 + i for i, m in enumerate(merges)})
    return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})


R50K_TINY = tiny_encoding("r50k_tiny", R50K_PAT)
O200K_TINY = tiny_encoding("o200k_tiny", O200K_PAT)

# Unassigned in older Unicode tables (CJK Ext J is Unicode 17): the `regex` module and
# tiktoken's engine may class it differently, so the counter hands such text to tiktoken.
NEW_CHAR = "\U000323b0"


def split_at(text: str, cuts: Sequence[int]) -> list[str]:
    """`text` cut at the given positions (duplicates give empty fragments)."""
    points = sorted(c % (len(text) + 1) for c in cuts)
    return [text[a:b] for a, b in itertools.pairwise([0, *points, len(text)])]


def no_surrogates(text: str) -> bool:
    return not any("\ud800" <= ch <= "\udfff" for ch in text)
