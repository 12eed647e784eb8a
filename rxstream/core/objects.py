"""Typed objects as they stream: snapshots, array elements, JSON Patches, over one JSON reader.

Input: deltas of one answer. The JSON text is the answer's text
(`TextDelta`, choice 0) or one tool call's arguments (`ToolCallDelta`): with
`tool=None` the first of them to carry something other than whitespace decides
(a tool call is followed by its index; a second call is an error that says to
pick one), with `tool=` an `int` (the call's index) or a `str` (the call's
name) the text is ignored and that call is read. With the request's
`output=` (an `rs.Output`, or the `OutputSpec` a request keeps in
`extensions["rxstream.output"]`) in place of a type, the answer is the text
or the arguments of the call named after the output (the forced tool of
`via="tool"`), whichever starts first, and any other call passes unread: so
one pipeline reads the answer whichever way the request (or a fallback
route with its own `via`) asked for it. Other deltas pass unread; the
answer ends at its `Finish` (or at the end of the input). A `Reset` starts
again with a fresh reader and is given out in its place.

The machines (each over `rxstream.core.json_stream.JSONStreamParser`):

- `PartialObjectAccumulator`: a `Partial` snapshot after a change, then the
  validated object. A snapshot copies the open containers and the open string
  (`JSONStreamParser.snapshot_size()`) and shares every closed value (see
  `rxstream.models.Partial`); to keep the whole linear, a snapshot is due when
  the text read since the last one, times `COPY_BUDGET - 1` (7), is at least
  the last snapshot's size (always, while that size is at most
  `SNAPSHOT_FREE`, 256): a snapshot grows by at most one entry or character
  per character read since the last, so at most 8 are copied per character
  read, and a small object gets a snapshot after every change. A change held
  back shows in the next snapshot; the validated object follows the last one.
  Text no snapshot can be due for yet is held and read (by a reader without
  events, `JSONStreamParser(events=False)`) with the piece that makes one
  due, or at the end: the snapshots are the ones a reader of every piece
  shows after the same pieces, and JSON that is bad in held text is refused
  with the same offset, path and reason, later: once the last snapshot's
  size over 7 characters have arrived (with the 10,000 entries of a long
  list open, about 1,400 characters), or at the answer's end.
- `ElementSplitter`: each element of the array at a JSON Pointer once it has
  closed, validated on its own.
- `JSONPatchEncoder`: RFC 6902 operations from one snapshot to the next, at
  the same moments.
- `ObjectTextDecoder`: the JSON text itself, each piece checked by the reader
  before it goes out (the AI SDK's object text stream, for `useObject`).

Validation runs only on closed values (the whole object, or one element),
never on a snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from ..errors import OutputValidationError
from ..models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    JSONPatch,
    Output,
    Partial,
    Reset,
    TextDelta,
    ToolCallDelta,
)
from ._machine import FAILED, OPEN, MachineBase, only_deltas
from .json_stream import (
    JSONCompleted,
    JSONEvent,
    JSONGrew,
    JSONOpened,
    JSONStreamParser,
    Path,
    pointer,
)
from .schema import OutputSpec, output_spec
from .validation import Invalid, validator

__all__ = [
    "COPY_BUDGET",
    "SNAPSHOT_FREE",
    "ElementSplitter",
    "JSONPatchEncoder",
    "ObjectTextDecoder",
    "PartialObjectAccumulator",
    "answer_of",
    "parse_pointer",
    "where_of",
]

#: Entries (or characters) a snapshot may copy per character read.
COPY_BUDGET: Final = 8
#: A snapshot this small is always due.
SNAPSHOT_FREE: Final = 256

# What `output=` is to the machines that validate nothing (`where_of`'s hint).
_NOT_VALIDATED = "it only says where the answer comes (nothing is validated here)"


def parse_pointer(text: str) -> tuple[str, ...]:
    """The reference tokens of a JSON Pointer (RFC 6901); `""` is the whole document.

    Raises:
        ValueError: a pointer that is neither `""` nor starts with `/`.

    >>> parse_pointer("/results/0/a~1b~0")
    ('results', '0', 'a/b~')
    """
    if text == "":
        return ()
    if not text.startswith("/"):
        raise ValueError(f"a JSON Pointer is '' or starts with '/', got {text!r}")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in text[1:].split("/"))


def answer_of(output: object, tool: int | str | None) -> tuple[object, int | str | None, bool]:
    """Where the answer is read and what validates it: `(target, tool, or_text)`.

    An `rs.Output` or `OutputSpec` names the call its forced tool would be
    (`or_text` True: that call's arguments or the text, whichever starts
    first) and its target validates; anything else validates as it is and
    `tool` stays as given.

    Raises:
        ValueError: both an `rs.Output` (or `OutputSpec`) and `tool=`.

    >>> answer_of(Output({"title": "City", "type": "object"}, via="tool"), None)[1:]
    ('City', True)
    """
    if not isinstance(output, Output | OutputSpec):
        return output, tool, False
    spec = output_spec(output)
    if tool is not None:
        raise ValueError(
            f"tool={tool!r} with output={type(output).__name__}(...): the output already says "
            f"where the answer comes (the text, or the call named {spec.name!r}); give one"
        )
    return spec.target, spec.name, True


def where_of(
    output: Output | OutputSpec | None, tool: int | str | None, operator: str, hint: str
) -> tuple[int | str | None, bool]:
    """Where a machine that validates nothing reads the answer: `(tool, or_text)`.

    The request's `output=` (an `rs.Output` or `OutputSpec`) only says where
    the answer comes, as `answer_of` reads it; None leaves `tool` as given.

    Raises:
        TypeError: `output` is neither None, an `rs.Output` nor an `OutputSpec`
            (`hint` says what the caller may have meant).
        ValueError: both `output` and `tool`.

    >>> where_of(Output({"title": "City", "type": "object"}, via="tool"), None, "rs.x()", "")
    ('City', True)
    """
    if output is None:
        return tool, False
    if not isinstance(output, Output | OutputSpec):
        raise TypeError(
            f"output= of {operator} is the request's output (an rs.Output or the request's "
            f"OutputSpec), not {type(output).__name__}; {hint}"
        )
    _, tool, or_text = answer_of(output, tool)
    return tool, or_text


class _Reading(MachineBase):
    """What the three machines share: picking the JSON text out of deltas, one reader."""

    __slots__ = ("_ended", "_kind", "_or_text", "_reader", "_texts", "_tool", "_wire")

    def __init__(self, tool: int | str | None, *, or_text: bool = False) -> None:
        super().__init__()
        if tool is not None and not isinstance(tool, int | str):
            raise TypeError(f"tool= is a call's index (int) or name (str), not {tool!r}")
        self._tool = tool
        self._or_text = or_text  # the text, or the call named `tool`: whichever starts first
        self._start()

    def _start(self) -> None:
        self._reader = JSONStreamParser()
        self._texts: list[str] = []
        self._kind: str | None = None if self._tool is None or self._or_text else "tool"
        self._wire: int | None = self._tool if isinstance(self._tool, int) else None
        self._ended = False

    def feed(self, item: Delta) -> list[Any]:
        """Take one delta; return what it makes visible."""
        if self._state is not OPEN:
            self._refuse()
        out: list[Any] = []
        if type(item) is TextDelta and self._kind == "text" and not self._ended:
            # The usual delta, once the text is known to be the answer: read at once.
            piece = item.text
            if piece and item.choice == 0:
                try:
                    self._texts.append(piece)
                    self._take_text(piece, out)
                except BaseException:
                    self._state = FAILED
                    raise
            return out
        try:
            for delta in only_deltas(item, self.operator):
                self._take(delta, out)
        except BaseException:
            self._state = FAILED
            raise
        return out

    def close(self) -> list[Any]:
        """End the input: the last of the value (or the error that it is unfinished or absent)."""
        self._closing()
        out: list[Any] = []
        try:
            if not self._ended:
                self._end(out)
        except BaseException:
            self._state = FAILED
            raise
        return out

    def _take(self, delta: Delta, out: list[Any]) -> None:
        if type(delta) is Reset:
            self._start()
            out.append(delta)
            return
        if self._ended or delta.choice != 0:
            return
        piece = self._piece(delta)
        if piece:
            self._texts.append(piece)
            self._take_text(piece, out)
        elif type(delta) is Finish:
            self._end(out)

    def _piece(self, delta: Delta) -> str | None:
        """The JSON text `delta` carries, if it is the one being read."""
        if type(delta) is TextDelta:
            if self._kind is None and delta.text.strip():
                self._kind = "text"
            return delta.text if self._kind == "text" else None
        if type(delta) is not ToolCallDelta:
            return None
        if self._kind is None:
            if self._or_text and delta.name != self._tool:
                return None  # another call than the output's: not the answer
            self._kind = "tool"
        if self._kind != "tool":
            return None
        tool = self._tool
        if isinstance(tool, str):
            if delta.name == tool and self._wire is None:
                self._wire = delta.index
            return delta.arguments if self._wire is not None and delta.index == self._wire else None
        if self._wire is None:
            self._wire = delta.index
        elif delta.index != self._wire:
            if tool is None:
                raise ValueError(
                    f"{self.operator} reads one tool call, and a second one (index "
                    f"{delta.index!r}, after {self._wire!r}) arrived: pick one with tool= "
                    "(its index or name)"
                )
            return None
        return delta.arguments

    def _end(self, out: list[Any]) -> None:
        self._ended = True
        self._read(self._reader.close(), "", out)
        self._finish(out)

    def _text(self) -> str:
        if len(self._texts) > 1:
            self._texts[:] = ["".join(self._texts)]
        return self._texts[0] if self._texts else ""

    def _take_text(self, piece: str, out: list[Any]) -> None:
        """Read `piece` of the JSON text; what it makes visible into `out`."""
        self._read(self._reader.feed(piece), piece, out)

    def _read(self, events: list[JSONEvent], piece: str, out: list[Any]) -> None:
        """What the reader's `events` for `piece` (`""` at the end) make visible, into `out`."""
        raise NotImplementedError  # pragma: no cover

    def _finish(self, out: list[Any]) -> None:
        raise NotImplementedError  # pragma: no cover


def _shows(event: JSONEvent) -> bool:
    """Whether `event` changes a snapshot (a container closing in place does not)."""
    return not (type(event) is JSONCompleted and event.was_open and type(event.value) is not str)


class _Pacing:
    """When a snapshot (or patch) is due: the rule in the module docstring."""

    __slots__ = ("pending", "read", "size")

    def __init__(self) -> None:
        self.read = 0  # characters read since the last snapshot
        self.pending = False  # a change not shown yet
        self.size = 0  # the last snapshot's size, 0 when it was at most SNAPSHOT_FREE

    def waits(self) -> bool:
        """Whether no snapshot can be due yet: too few characters read since the last one."""
        return self.read * (COPY_BUDGET - 1) < self.size

    def due(self, changed: bool) -> bool:
        """Whether a snapshot is due now (`changed`: the last text changed what one shows)."""
        if changed:
            self.pending = True
        return self.pending and not self.waits()

    def shown(self, size: int) -> None:
        """A snapshot of `size` (`JSONStreamParser.snapshot_size()`) went out."""
        self.read = 0
        self.pending = False
        self.size = size if size > SNAPSHOT_FREE else 0


class PartialObjectAccumulator(_Reading):
    """Snapshots of a JSON object as it streams, then the validated object.

    Args:
        output: what the final value must be (see `rxstream.core.validation`):
            a pydantic model, msgspec Struct, dataclass, TypedDict or JSON
            Schema dict; None keeps the plain value. Or the request's
            `rs.Output` / `OutputSpec`: its target validates, and it says
            where the answer is read (see the module docstring).
        tool: which tool call to read (see the module docstring); not with
            an `rs.Output`.

    Returns (from `feed`): `Partial` snapshots, paced as the module docstring
    says; at the answer's `Finish` (or `close()`), the validated object.

    Raises:
        JSONStreamError: the text is not JSON, is unfinished, or holds no value.
        OutputValidationError: the final value does not validate; carries
            the raw text and the errors.
        ValueError: a second tool call arrived with `tool=None`.

    >>> acc = PartialObjectAccumulator()
    >>> acc.feed(TextDelta('{"a": [1, 2')) + acc.feed(TextDelta("]}")) + acc.close()
    [Partial(value={'a': [1]}, growing=None), {'a': [1, 2]}]
    """

    __slots__ = ("_held", "_pacing", "_validate")

    operator = "rs.partial_object()"

    def __init__(self, output: object = None, *, tool: int | str | None = None) -> None:
        target, tool, or_text = answer_of(output, tool)
        self._validate = validator(target)
        self._pacing = _Pacing()
        super().__init__(tool, or_text=or_text)

    def _start(self) -> None:
        super()._start()
        self._reader = JSONStreamParser(events=False)  # snapshots need no events
        self._pacing = _Pacing()
        self._held: list[str] = []  # text not read yet: no snapshot was due

    def _take_text(self, piece: str, out: list[Any]) -> None:
        pacing = self._pacing
        pacing.read += len(piece)
        held = self._held
        if pacing.read * (COPY_BUDGET - 1) < pacing.size:  # `waits()`, inline: the hot path
            held.append(piece)  # no snapshot can be due: read this text with the next one
            return
        if held:
            held.append(piece)
            piece = "".join(held)
            held.clear()
        reader = self._reader
        reader.feed(piece)
        if reader.complete or not pacing.due(reader.changed):
            return
        if reader.visible:
            out.append(Partial(reader.snapshot(), reader.growing))
        pacing.shown(reader.snapshot_size())

    def _end(self, out: list[Any]) -> None:
        if self._held:  # the text held back is read before the end
            piece = "".join(self._held)
            self._held.clear()
            self._reader.feed(piece)
        super()._end(out)

    def _read(self, events: list[JSONEvent], piece: str, out: list[Any]) -> None:
        pass  # at the end only (`_end`): the value is complete there, or the reader raised

    def _finish(self, out: list[Any]) -> None:
        try:
            out.append(self._validate(self._reader.value))
        except Invalid as exc:
            raise OutputValidationError(text=self._text(), errors=exc.errors) from None


class ElementSplitter(_Reading):
    """Each element of the array at a JSON Pointer, once it has closed, validated alone.

    Args:
        pointer: where the array is (RFC 6901): `""` for a top-level array,
            `"/results"`, `"/a~1b/0"` (`~1` is `/`, `~0` is `~`).
        item: what each element must be (as `output=` of
            `PartialObjectAccumulator`); None keeps the plain values.
        tool: which tool call to read (see the module docstring).
        output: the request's `rs.Output` / `OutputSpec`, which says where
            the answer is read (see the module docstring); not with `tool`.

    Returns (from `feed`): the elements it closes, in order. The rest of the
    document is read (it must be JSON) but neither validated nor kept: only
    the containers on the way to the array stay in the reader's tree. The
    array's object, array and string elements are skimmed
    (`JSONStreamParser(skim=)`): delimited by brackets, braces and quotes,
    then decoded once, whole, by the standard decoder; so JSON that is bad
    inside such an element is refused when the element ends, with the error
    (offset, path) the character-by-character reading gives. An error in a
    fragment (an element that does not validate, text that is not JSON)
    wins over the elements that closed before it in the same fragment.
    Inside an element, text that cannot close it is held here and read with
    the text that can (`JSONStreamParser.holds`).

    Raises:
        JSONStreamError: the text is not JSON, is unfinished, or holds no value.
        OutputValidationError: an element does not validate (its JSON text and
            path in the error), or the value at `pointer` is not an array, or
            the document closed without one there.

    >>> s = ElementSplitter("/r")
    >>> s.feed(TextDelta('{"r": [{"a": 1}, {"a"')) + s.feed(TextDelta(": 2}]}")) + s.close()
    [{'a': 1}, {'a': 2}]
    """

    __slots__ = (
        "_at",
        "_count",
        "_found",
        "_got",
        "_held",
        "_mine",
        "_need",
        "_other",
        "_own",
        "_pointer",
        "_text_of",
        "_tokens",
        "_validate",
    )

    operator = "rs.elements()"

    def __init__(
        self,
        pointer: str,
        *,
        item: object = None,
        tool: int | str | None = None,
        output: Output | OutputSpec | None = None,
    ) -> None:
        self._tokens = parse_pointer(pointer)
        self._pointer = pointer
        self._validate = validator(item)
        tool, or_text = where_of(output, tool, self.operator, "the elements' own type is item=")
        super().__init__(tool, or_text=or_text)

    def _start(self) -> None:
        super()._start()
        self._reader = JSONStreamParser(keep=self._keeps, skim=self._skims)
        self._count = 0  # elements given out
        self._found = False  # the array at the pointer has closed
        self._at: Path | None = None  # the array's path, once it opened
        self._held: list[str] = []  # text the reader would only hold (`JSONStreamParser.holds`)
        # What the text must bring to be read (`JSONStreamParser.holds`): `_need` closing
        # characters (`_own` or `_other`), one of them `_own`; `_need` 0: read it at once.
        self._need = 0
        self._own = self._other = ""
        self._got = self._mine = 0  # those the held text brought

    def feed(self, item: Delta) -> list[Any]:
        """Take one delta; return the elements it closes.

        The hot path: inside an element (`_need`), text that cannot close it is
        held here, one count and one append, and read with the text that can.
        """
        if type(item) is not TextDelta or item.choice != 0:
            return super().feed(item)
        text = item.text
        need = self._need  # 0 unless open, reading the text, and inside a skimmed element
        if need == 1:  # one closer to come, its own: the usual case
            if self._own not in text:
                self._held.append(text)
                return []
        elif need:
            mine = text.count(self._own)
            got = self._got + (mine + text.count(self._other) if self._other else mine)
            mine += self._mine
            if got < need or not mine:
                self._got = got
                self._mine = mine
                self._held.append(text)
                return []
        elif self._kind != "text" or self._ended or self._state is not OPEN or not text:
            return super().feed(item)
        out: list[Any] = []  # the text, known to be the answer: read at once
        try:
            self._texts.append(text)
            self._take_text(text, out)
        except BaseException:
            self._state = FAILED
            raise
        return out

    def feed_all(self, items: Iterable[Delta], out: list[Any]) -> None:
        """`feed` each item, into `out` (how a chain of machines feeds this one).

        The usual held delta is held in the loop itself, with no call: text of
        choice 0 without the one closer the element waits for (`_need` 1).
        Raising, it leaves in `out` what the items before the bad one gave.
        """
        held = self._held
        for item in items:
            if (
                self._need == 1
                and type(item) is TextDelta
                and item.choice == 0
                and self._own not in item.text
            ):
                held.append(item.text)
            else:
                out += self.feed(item)

    def close(self) -> list[Any]:
        """End the input: the last elements (or the error that the text is unfinished)."""
        self._need = 0
        return super().close()

    def _end(self, out: list[Any]) -> None:
        if self._held:  # the text held back is read before the end
            self._texts.append("")
            self._take_text("", out)
        self._need = 0  # nothing is held after the answer's end: what follows is not read
        super()._end(out)

    def _keeps(self, path: Path) -> bool:
        """Keep the way to the array and the insides of an element being read, nothing else.

        An element itself is not kept in the array: it is given out when it closes.
        """
        return len(path) != len(self._tokens) + 1 and self._under(path)

    def _take_text(self, piece: str, out: list[Any]) -> None:
        held = self._held
        if held:
            self._texts[-1:-1] = held  # before `piece`, which the caller kept
            held.append(piece)
            piece = "".join(held)
            held.clear()
        self._need = self._got = self._mine = 0  # until all went well: a failed one holds none
        reader = self._reader
        events = reader.feed(piece)
        if events:  # most pieces inside a skimmed element give none
            self._read(events, piece, out)
        holds = reader.holds()
        if holds is not None and self._kind == "text":
            self._own, self._other, self._need = holds

    def _skims(self, path: Path) -> bool:
        """Skim the array at the pointer: its elements are decoded whole, each once."""
        if len(path) == len(self._tokens) and self._under(path):
            self._at = path  # every array opening is asked: its elements come after this
            return True
        return False

    def _read(self, events: list[JSONEvent], piece: str, out: list[Any]) -> None:
        depth = len(self._tokens)
        for event in events:
            path = event.path
            if len(path) == depth + 1:  # an element (the usual event: tested first)
                if (
                    type(event) is JSONCompleted
                    and path[-1] == self._count
                    and path[:-1] == self._at
                ):
                    self._give(event.value, out)
                continue
            if len(path) > depth or not self._under(path):
                continue
            if type(event) is JSONCompleted:
                self._whole(path, event.value, out)
            elif type(event) is JSONOpened and len(path) == depth and event.kind != "array":
                self._not_array(event.kind)

    def _under(self, path: Path) -> bool:
        return all(str(step) == token for step, token in zip(path, self._tokens, strict=False))

    def _whole(self, path: Path, value: JSON, out: list[Any]) -> None:
        """A value closed at or above the pointer: the array in it, or the error that none is."""
        for token in self._tokens[len(path) :]:
            if isinstance(value, dict) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                raise OutputValidationError(
                    text=_excerpt_json(value),
                    errors=({"loc": (), "msg": "no value at this JSON Pointer"},),
                    path=self._pointer,
                )
        if not isinstance(value, list):
            self._not_array(_KINDS.get(type(value), "number"))
        for element in value[self._count :]:
            self._give(element, out)
        self._found = True

    def _give(self, element: JSON, out: list[Any]) -> None:
        try:
            out.append(self._validate(element))
        except Invalid as exc:
            raise OutputValidationError(
                text=_excerpt_json(element),
                errors=exc.errors,
                path=f"{self._pointer}/{self._count}",
            ) from None
        self._count += 1

    def _not_array(self, kind: str) -> None:
        raise OutputValidationError(
            text="",
            errors=({"loc": (), "msg": f"expected an array here, got {kind}"},),
            path=self._pointer,
        )

    def _finish(self, out: list[Any]) -> None:
        if not self._found:  # pragma: no cover - the whole document closes above the pointer
            raise OutputValidationError(
                text=self._text(),
                errors=({"loc": (), "msg": "the document has no array here"},),
                path=self._pointer,
            )


class JSONPatchEncoder(_Reading):
    """JSON Patch (RFC 6902) operations from one snapshot of the object to the next.

    Applied in order to `null`, the patches give each `Partial` snapshot that
    `PartialObjectAccumulator` gives for the same input (paced the same way);
    the last patch leaves the final value. `add` puts a value that appears (a
    container or string as it opens, a scalar once whole, a container that
    arrived whole); `replace` sets a string that grew to its text so far.

    Args:
        tool: which tool call to read (see the module docstring).
        output: the request's `rs.Output` / `OutputSpec`, which says where
            the answer is read (see the module docstring); not with `tool`.
            Nothing is validated.

    Raises:
        JSONStreamError: the text is not JSON, is unfinished, or holds no value.

    >>> enc = JSONPatchEncoder()
    >>> for patch in enc.feed(TextDelta('{"a": "x')) + enc.feed(TextDelta('y"}')) + enc.close():
    ...     print(patch.ops)
    ({'op': 'add', 'path': '', 'value': {}}, {'op': 'add', 'path': '/a', 'value': 'x'})
    ({'op': 'replace', 'path': '/a', 'value': 'xy'},)
    """

    __slots__ = ("_added", "_ops", "_pacing", "_string")

    operator = "rs.json_patches()"

    def __init__(
        self, *, tool: int | str | None = None, output: Output | OutputSpec | None = None
    ) -> None:
        tool, or_text = where_of(output, tool, self.operator, _NOT_VALIDATED)
        super().__init__(tool, or_text=or_text)

    def _start(self) -> None:
        super()._start()
        self._pacing = _Pacing()
        self._ops: list[JSONObject] = []
        self._string: Path | None = None  # the string that grew since the last patch
        self._added: JSONObject | None = None  # the `add` of a string opened since then

    def _read(self, events: list[JSONEvent], piece: str, out: list[Any]) -> None:
        for event in events:
            self._op(event)
        reader = self._reader
        pacing = self._pacing
        pacing.read += len(piece)
        if reader.complete:
            self._flush(out)
        elif pacing.due(any(map(_shows, events))):
            if self._string is not None:
                text = reader.growing_text()
                if text is not None:
                    self._set(self._string, text)
                self._string = None
            self._flush(out)
            pacing.shown(reader.snapshot_size())

    def _op(self, event: JSONEvent) -> None:
        path = event.path
        match event:
            case JSONOpened(kind=kind):
                op = _op("add", path, {"object": {}, "array": [], "string": ""}[kind])
                self._ops.append(op)
                if kind == "string":
                    self._added = op
            case JSONGrew():
                self._string = path
            case JSONCompleted(value=value, was_open=was_open):
                if not was_open:
                    self._ops.append(_op("add", path, value))
                elif isinstance(value, str):
                    self._set(path, value)
                    self._string = None

    def _set(self, path: Path, text: str) -> None:
        """The string at `path` is now `text`: in its `add` if not sent yet, else a `replace`."""
        added = self._added
        if added is not None and added["path"] == pointer(path):
            added["value"] = text
        else:
            self._ops.append(_op("replace", path, text))

    def _flush(self, out: list[Any]) -> None:
        if self._ops:
            out.append(JSONPatch(tuple(self._ops)))
            self._ops = []
        self._added = None

    def _finish(self, out: list[Any]) -> None:
        self._flush(out)


class ObjectTextDecoder(_Reading):
    """The JSON text of the object, piece by piece, each piece checked by the reader first.

    What the AI SDK's `useObject` reads: a plain text stream of the object's
    JSON, which the client parses (partially) as it grows. A piece goes out
    only once the incremental reader has taken it, so a client is never sent
    text that cannot be JSON: the stream fails there instead, and at the end
    if the value is unfinished or absent. Text before the value and after it
    (whitespace) goes out as it came.

    Args:
        tool: which tool call to read (see the module docstring).
        output: the request's `rs.Output` / `OutputSpec`, which says where
            the answer is read (see the module docstring); not with `tool`.
            Nothing is validated.

    Raises:
        JSONStreamError: the text is not JSON, is unfinished, or holds no value.

    >>> d = ObjectTextDecoder()
    >>> d.feed(TextDelta('{"a": ')) + d.feed(TextDelta("1}")) + d.close()
    ['{"a": ', '1}']
    """

    __slots__ = ()

    operator = "rs.object_text()"

    def __init__(
        self, *, tool: int | str | None = None, output: Output | OutputSpec | None = None
    ) -> None:
        tool, or_text = where_of(output, tool, self.operator, _NOT_VALIDATED)
        super().__init__(tool, or_text=or_text)

    def _read(self, events: list[JSONEvent], piece: str, out: list[Any]) -> None:
        if piece:
            out.append(piece)

    def _finish(self, out: list[Any]) -> None:
        pass


# JSON's names of the kinds of a decoded value (int and float are "number").
_KINDS = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def _op(op: str, path: Path, value: JSON) -> JSONObject:
    return {"op": op, "path": pointer(path), "value": value}


def _excerpt_json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False)
