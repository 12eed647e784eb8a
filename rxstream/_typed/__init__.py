"""Typed decoding for the `fast` extra: each dialect's common events declared as msgspec types.

One module per dialect (named as the dialect's package under
`rxstream.core.dialects`), loaded by `typed(name)` only when msgspec is installed and the fast paths
are on: importing this package loads none of them, nor msgspec. It sits
above `rxstream._fast` (whose switch, loaders and constructors it uses) and
below the core, whose decoders ask it for their module. Each decodes the events
a dialect usually sends (text, reasoning and tool-argument deltas, usage,
finish) straight into msgspec types, which does the parsing and the shape
checks in C; anything its types do not know goes to the dialect decoder's
general path, so the items and errors are exactly the standard library's.

No field is declared `msgspec.Raw`: msgspec skips such a field without making
numbers of it, so it would take an integer of more digits than `json.loads`
does (`sys.get_int_max_str_digits()`, which msgspec honours everywhere else).
A field the decoders do not read is `Any`, built and dropped.
"""

from __future__ import annotations

import types
from functools import cache

from .. import _fast

__all__ = ["module", "typed"]


def typed(dialect: str) -> types.ModuleType | None:
    """The typed (msgspec) decoding module of a dialect for a decoder being built, or None.

    `dialect` names a module of this package (the dialect's package name,
    e.g. `"gemini"`). None when the fast paths are off, when msgspec is not
    installed or `rxstream._fast.msgspec_loads` was set to None (the
    standard-library path), or when the dialect has no typed module. A typed
    module decodes the events a dialect usually sends straight into msgspec
    types; whatever its types do not know goes to the decoder's general path,
    never to a drop, so the items and errors are the same either way.
    """
    if not _fast.enabled() or _fast.msgspec_loads is None:
        return None
    return module(dialect)


@cache
def module(dialect: str) -> types.ModuleType | None:
    """The typed module of `dialect` (its package name under `rxstream.core.dialects`), or None.

    Imported on first use (each imports msgspec); None for a dialect without one.
    """
    match dialect:
        case "anthropic":
            from . import anthropic

            return anthropic
        case "bedrock":
            from . import bedrock

            return bedrock
        case "cohere":
            from . import cohere

            return cohere
        case "gemini":
            from . import gemini

            return gemini
        case "ollama":
            from . import ollama

            return ollama
        case "openai_chat":
            from . import openai_chat

            return openai_chat
        case "openai_responses":
            from . import openai_responses

            return openai_responses
    return None
