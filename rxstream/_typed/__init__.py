"""Typed decoding for the `fast` extra: each dialect's common events declared as msgspec types.

One module per dialect (named as the dialect's package under
`rxstream.core.dialects`), loaded through `rxstream._fast.typed(name)` only
when msgspec is installed and the fast paths are on. Each decodes the events
a dialect usually sends (text, reasoning and tool-argument deltas, usage,
finish) straight into msgspec types, which does the parsing and the shape
checks in C; anything its types do not know goes to the dialect decoder's
general path, so the items and errors are exactly the standard library's.

No field is declared `msgspec.Raw`: msgspec skips such a field without making
numbers of it, so it would take an integer of more digits than `json.loads`
does (`sys.get_int_max_str_digits()`, which msgspec honours everywhere else).
A field the decoders do not read is `Any`, built and dropped.
"""
