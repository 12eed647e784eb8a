"""JSON documents for the streaming parsers' properties: any document, and one with a typo.

`documents()` draws a JSON text (`json_values` dumped, ASCII or not, indented or not);
`damaged()` one of them with a character deleted, inserted or replaced, valid or not.
"""

from __future__ import annotations

import json

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
