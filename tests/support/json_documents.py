"""JSON documents for the streaming parsers' properties: any document, and one with a typo.

`documents()` draws a JSON text (`json_values` dumped, ASCII or not, indented or not);
`damaged()` one of them with a character deleted, inserted or replaced, valid or not;
`items()` the text of an item-like object (for typed elements: see `items`).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    value = draw(json_values)
    indent = draw(st.sampled_from([None, 1]))
    return json.dumps(value, ensure_ascii=draw(st.booleans()), indent=indent)


@st.composite
def damaged(draw: st.DrawFn) -> str:
    text = draw(documents())
    where = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(["delete", "insert", "replace"]))
    char = draw(st.sampled_from(list(',:[]{}"\\-0123456789.eE+ tfnaNI\x01u')))
    if how == "delete":
        return text[:where] + text[where + 1 :]
    if how == "insert":
        return text[:where] + char + text[where:]
    return text[:where] + char + text[where + 1 :]


_item_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3),
    max_leaves=6,
)


@st.composite
def items(draw: st.DrawFn) -> str:
    """An item-like object's text: fields of any JSON kind (so some do not validate), a
    duplicate key now and then, escapes or not, numbers written in several ways."""
    fields: list[tuple[str, Any]] = []
    for name in ("id", "name", "score", "tags", "note"):
        if draw(st.booleans()) or name in ("id", "name"):
            kind: st.SearchStrategy[Any] = {
                "id": st.integers(min_value=-(10**30), max_value=10**30),
                "name": st.text(max_size=8),
                "score": st.floats(allow_nan=False) | st.integers(-(10**20), 10**20),
                "tags": st.lists(st.text(max_size=4), max_size=3),
                "note": st.none() | st.text(max_size=8),
            }[name]
            if draw(st.booleans()):
                kind = kind | _item_values  # any JSON: some items do not validate
            fields.append((name, draw(kind)))
    if draw(st.booleans()) and fields:
        fields.insert(draw(st.integers(0, len(fields))), (fields[-1][0], draw(_item_values)))
    ascii_ = draw(st.booleans())
    body = ", ".join(
        f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=ascii_, allow_nan=True)}" for k, v in fields
    )
    text = "{" + body + "}"
    for a, b in (("1.0", "1.00"), ("e+", "E+"), ("e-", "e-0")):
        if draw(st.booleans()):
            text = text.replace(a, b)
    return text
