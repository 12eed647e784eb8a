"""`partial_object()`, `elements()`, `json_patches()`, `object_text()`: typed objects, streaming.

Each is a machine of `rxstream.core.objects` (over the incremental JSON reader
of `rxstream.core.json_stream`) under Rx; they take deltas or openai-chat
chunks. How the JSON text is picked out of the deltas, how snapshots are
paced and what each error means is written in `rxstream.core.objects`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable

from ..core.objects import (
    ElementSplitter,
    JSONPatchEncoder,
    ObjectTextDecoder,
    PartialObjectAccumulator,
    answer_of,
)
from ..core.schema import OutputSpec
from ..core.validation import validator
from ..models import ChatChunk, Delta, JSONPatch, Output, Partial, Reset
from ._chunk_input import chunks_or_deltas
from ._machine import machine_operator

__all__ = ["elements", "json_patches", "object_text", "partial_object"]


def partial_object(
    output: object = None, *, tool: int | str | None = None
) -> Callable[[Observable[ChatChunk | Delta]], Observable[Partial[Any] | Any | Reset]]:
    """Snapshots of the JSON object an answer streams, then the validated object.

    The answer's text (or one tool call's arguments, see `tool`) is read by an
    incremental JSON reader, once, however finely it is cut. After a change it
    emits `rs.Partial(value, growing)`: plain dicts and lists with the
    completed scalars only (never a number or `true`/`false`/`null` before it
    is whole, so `null` and a missing key stay different) and the open string
    with its text so far. At the answer's `Finish` (or the end of the input)
    it emits the final value, validated against `output`. A snapshot copies
    the open containers, so snapshots are paced to keep the whole linear: one
    after every change while the object is small, then as often as 8 copied
    entries per character read allow (`rxstream.core.objects`).

    Marble sketch (`a` = `{"city": "Pa`, `b` = `ris", "n": 1`, `c` = `}`,
    `f` = the `Finish`)::

        -a-b-c-f-|   ->   -P-Q---O-|
        P = Partial({"city": "Pa"}, growing=("city",))
        Q = Partial({"city": "Paris"})      (n is not shown before it is whole)
        O = {"city": "Paris", "n": 1}       (validated: a `City` with output=City)

    Args:
        output: what the final value must be: a pydantic model, a msgspec
            Struct, a dataclass or TypedDict (validated by pydantic, else
            msgspec), or a JSON Schema dict (by jsonschema if installed, the
            `schema` extra; else the structural checks
            `rxstream.core.validation` lists, and a schema asserting more is
            refused). None keeps the plain value. Snapshots are never validated.
            The request's own `output=` works too: an `rs.Output` (or the
            `OutputSpec` in `request.extensions["rxstream.output"]`); its
            target validates, and the answer is read from the text or from
            the call of the tool named after it (`via="tool"`), whichever
            starts first, other calls passing unread: one pipeline for
            either way (and for a fallback route asking the other way).
        tool: read a tool call's arguments instead of the text: its index
            (`int`) or name (`str`). With None, the first delta that carries
            something decides: text, or the first tool call (a second call is
            then an error). Not with an `rs.Output`, which names its tool.

    Returns:
        An operator from deltas (or chunks) to `Partial` snapshots and the
        validated object (and the `Reset`s, after which it starts again).

    Raises:
        TypeError: `output` is a type and neither pydantic nor msgspec is
            installed, or a schema asserting what only jsonschema checks and
            jsonschema is not installed.
        ValueError: both an `rs.Output` and `tool=`.

    Errors (through `on_error`): `JSONStreamError` when the text is not JSON,
    stops before the value is whole, or holds no value at all;
    `OutputValidationError` (with `.text` and `.errors`) when the final value
    does not validate.

    >>> import reactivex
    >>> from rxstream.models import Finish, TextDelta
    >>> src = reactivex.of(TextDelta('{"n": [1, '), TextDelta("2]}"), Finish("stop"))
    >>> _ = src.pipe(partial_object()).subscribe(print)
    Partial(value={'n': [1]}, growing=None)
    {'n': [1, 2]}
    """
    # A missing validator library (or a wrong pairing) fails here, not at the first value.
    validator(answer_of(output, tool)[0])
    return machine_operator(
        chunks_or_deltas(lambda: PartialObjectAccumulator(output, tool=tool), "rs.partial_object()")
    )


def elements(
    pointer: str = "",
    *,
    item: object = None,
    tool: int | str | None = None,
    output: Output | OutputSpec | None = None,
) -> Callable[[Observable[ChatChunk | Delta]], Observable[Any]]:
    """Each element of the array at a JSON Pointer, as soon as it has closed, validated.

    The way to show a list of results as it fills in: element `i` comes once
    its closing `}` (or `]`, `"`, or the `,` after a number) has arrived, and
    is validated alone against `item`. The rest of the document is read (it
    must be JSON) but nothing else is emitted.

    Marble sketch (`pointer="/results"`; `a` = `{"results": [{"t": 1}, {"t"`,
    `b` = `: 2}]}`, `f` = the `Finish`)::

        -a-b-f-|   ->   -x-y---|
        x = {"t": 1}    y = {"t": 2}

    Args:
        pointer: where the array is, as a JSON Pointer (RFC 6901): `""` for a
            top-level array, `"/results"`, `"/a~1b"` for the key `a/b`.
        item: what each element must be (as `output=` of `partial_object`);
            None keeps the plain values.
        tool: read a tool call's arguments (as in `partial_object`).
        output: the request's `output=` (an `rs.Output`, or the `OutputSpec`
            in `request.extensions["rxstream.output"]`): read the text or the
            call of the tool named after it, whichever starts first, as
            `partial_object(output)` does. It only says where the answer
            comes; the elements are validated by `item`.

    Returns:
        An operator from deltas (or chunks) to the elements (and `Reset`s).

    Raises:
        ValueError: `pointer` is not a JSON Pointer; both `output` and `tool`.
        TypeError: `output` is not an `rs.Output` or `OutputSpec`.

    Errors (through `on_error`): `JSONStreamError` when the text is not JSON
    or is unfinished; `OutputValidationError` when an element does not
    validate (its path is in `.path`), or when the value at `pointer` is not
    an array or the document has none there.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> src = reactivex.of(TextDelta('{"r": [{"t": 1}, {"t"'), TextDelta(": 2}]}"))
    >>> _ = src.pipe(elements("/r")).subscribe(print)
    {'t': 1}
    {'t': 2}
    """
    ElementSplitter(pointer, item=item, tool=tool, output=output)  # bad arguments fail here
    return machine_operator(
        chunks_or_deltas(
            lambda: ElementSplitter(pointer, item=item, tool=tool, output=output), "rs.elements()"
        )
    )


def json_patches(
    *, tool: int | str | None = None, output: Output | OutputSpec | None = None
) -> Callable[[Observable[ChatChunk | Delta]], Observable[JSONPatch | Reset]]:
    """JSON Patches (RFC 6902) that rebuild the streaming object, for UIs that render it.

    Applied in order to `null` with a standard applier, the patches give each
    snapshot `partial_object()` shows for the same input, then the final
    value: `add` for a value that appears (a container or string as it opens,
    a scalar once whole), `replace` for a string that grew (its text so far).
    `rs.to_sse(dialect="rxstream")` writes them as `patch` events and
    `rs.decode("rxstream")` reads them back.

    Marble sketch (`a` = `{"t": "Hel`, `b` = `lo"}`)::

        -a-b-|   ->   -P-Q|
        P = JSONPatch(add "" {}, add /t "Hel")
        Q = JSONPatch(replace /t "Hello")

    Args:
        tool: read a tool call's arguments (as in `partial_object`).
        output: the request's `output=` (an `rs.Output`, or the `OutputSpec`
            in `request.extensions["rxstream.output"]`): read the text or the
            call of the tool named after it, whichever starts first, as
            `partial_object(output)` does. It only says where the answer
            comes: patches are not validated.

    Returns:
        An operator from deltas (or chunks) to `JSONPatch` items (and `Reset`s).

    Raises:
        ValueError: both `output` and `tool`.
        TypeError: `output` is not an `rs.Output` or `OutputSpec`.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> src = reactivex.of(TextDelta('{"t": "Hel'), TextDelta('lo"}'))
    >>> _ = src.pipe(json_patches()).subscribe(lambda p: print(p.ops))
    ({'op': 'add', 'path': '', 'value': {}}, {'op': 'add', 'path': '/t', 'value': 'Hel'})
    ({'op': 'replace', 'path': '/t', 'value': 'Hello'},)
    """
    JSONPatchEncoder(tool=tool, output=output)  # bad arguments fail here
    return machine_operator(
        chunks_or_deltas(lambda: JSONPatchEncoder(tool=tool, output=output), "rs.json_patches()")
    )


def object_text(
    *, tool: int | str | None = None, output: Output | OutputSpec | None = None
) -> Callable[[Observable[ChatChunk | Delta]], Observable[str]]:
    """The object's JSON text as a plain text stream: what the AI SDK's `useObject` reads.

    `useObject` (`experimental_useObject` of the `ai` package) fetches a text
    response and parses the text so far after every piece. This operator
    gives that text, piece by piece, each piece only once rxstream's
    incremental reader has taken it: text that cannot be JSON ends the stream
    with a `JSONStreamError` instead of reaching the client (and so does an
    answer that ends before its value closed, or holds none). Serve it as a
    `text/plain` streaming response (see the recipe "Structured output").

    Marble sketch (`a` = `{"t": "Hel`, `b` = `lo"}`, `f` = the `Finish`)::

        -a-b-f-|   ->   -x-y---|        x = '{"t": "Hel'   y = 'lo"}'

    Args:
        tool: read a tool call's arguments (as in `partial_object`).
        output: the request's `output=` (an `rs.Output`, or the `OutputSpec`
            in `request.extensions["rxstream.output"]`): read the text or the
            call of the tool named after it, whichever starts first, as
            `partial_object(output)` does (so `useObject` gets the object's
            text from a forced-tool provider too). Nothing is validated.

    Returns:
        An operator from deltas (or chunks) to `str` pieces of JSON text.

    Raises:
        ValueError: both `output` and `tool`.
        TypeError: `output` is not an `rs.Output` or `OutputSpec`.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> src = reactivex.of(TextDelta('{"t": "Hel'), TextDelta('lo"}'))
    >>> _ = src.pipe(object_text()).subscribe(print)
    {"t": "Hel
    lo"}
    """
    ObjectTextDecoder(tool=tool, output=output)  # bad arguments fail here
    return machine_operator(
        chunks_or_deltas(lambda: ObjectTextDecoder(tool=tool, output=output), "rs.object_text()")
    )
