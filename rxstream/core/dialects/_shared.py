"""What every dialect package shares: JSON text in (the loaders) and out (`dumps`),
and the honest end (what an answer is: `gives_answer`; what a cut is: `truncation`).

Input: JSON text (`str` or `bytes`) from a frame, a line or an event-stream
payload; output: the decoded value, or the compact text a renderer writes.
Invariant: whichever loader runs, the values and the error messages are the
standard library's (the fast loaders of `rxstream._fast` only go first; the
standard library has the last word on anything they refuse).
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable, Iterable
from itertools import pairwise
from json.encoder import encode_basestring
from typing import ClassVar

from ..._fast import enabled, loaders, scan_loads
from ...errors import TruncatedStreamError
from ...models import (
    JSON,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    Usage,
)
from ..lines import Cut, cut_short

__all__ = [
    "NO_ANSWER",
    "TEXT_MARK",
    "Budget",
    "ShapeError",
    "Template",
    "dumps",
    "gives_answer",
    "json_kind",
    "load_json",
    "load_with",
    "reread",
    "skeleton",
    "stdlib_loads",
    "text_halves",
    "truncation",
]

#: What `json.loads` reads a JSON string with (the C one where there is one).
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def skeleton(data: str, key: str, value: str) -> tuple[str, str] | None:
    """The JSON text around the string `value` of `key` in `data`, when `data` says so beyond doubt.

    `data` is an object just read whole, whose `key` held the non-empty string
    `value`. A later text made of the same prefix and suffix around another
    JSON string is the same object but for that string, so `reread` gives the
    string without reading the rest. Only when it is beyond doubt: `data` is a
    plain `str` (not a cut last event), holds `"key"` once, and has no escape
    outside the string (so no key spelled two ways), and the string there
    reads back as `value`. Else None.

    >>> skeleton('{"a":1,"text":"hi"}', "text", "hi")
    ('{"a":1,"text":"', '}')
    >>> reread('{"a":1,"text":"yo"}', '{"a":1,"text":"', '}')
    'yo'
    """
    template = Template.learn(data, key, value)
    if template is None:
        return None
    return template.around


def reread(data: object, prefix: str, suffix: str) -> str | None:
    """The string between a `skeleton`'s prefix and suffix, if `data` is made of them, else None."""
    if type(data) is not str or not (data.startswith(prefix) and data.endswith(suffix)):
        return None
    try:
        text, end = _scanstring(data, len(prefix))
    except ValueError:
        return None
    return text if end == len(data) - len(suffix) else None


#: A JSON integer of a `Template`'s hole: at most 640 digits, as `json.loads`
#: refuses an integer longer than `sys.get_int_max_str_digits()` (640 at the
#: least), so a longer one must take the whole reading (and its error).
_INTEGER_PATTERN = r"-?(?:0|[1-9][0-9]{0,639})(?![0-9])"
_integer = re.compile(_INTEGER_PATTERN).match

# The kinds of a `Template`'s holes, and the pattern of each free one: a JSON
# integer, a JSON string (what `json.loads` takes: no control character, only
# its escapes).
_TEXT, _STRING, _INTEGER = 0, 1, 2
# A JSON string's text, between its quotes (what `scanstring` reads): runs of
# plain characters, then each escape and the run after it (no group per
# character, which is many times faster on a string of any length).
_STRING_TEXT = r'([^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*)'
_PATTERNS = {
    # In a template a fixed text always follows an integer hole (the JSON after a
    # number, never a digit), so the pattern need not look past its last digit; a
    # leading zero before another digit is no JSON number.
    _INTEGER: r"-?(?!0[0-9])[0-9]{1,640}",
    _STRING: '"' + _STRING_TEXT.replace("(", "(?:", 1) + '"',
}
#: Each free hole's pattern, compiled, and the string's text and closing quote: what
#: `Template` reads an event with part by part (see `Template.read`).
_HOLES: dict[int, Callable[[str, int], re.Match[str] | None]] = {
    kind: re.compile(pattern).match for kind, pattern in _PATTERNS.items()
}
_string_text: Callable[[str, int], re.Match[str] | None] = re.compile(_STRING_TEXT + '"').match
#: The reads a `Template` makes part by part before it compiles its one pattern:
#: compiling an event's pattern costs some 700 µs (a stream's ids make it new to
#: `re`'s cache), which the compiled read, some 1.4 µs faster, pays back after
#: about 500 reads; so a short stream never compiles one.
_COMPILE_AT = 512


class Template:
    """The JSON text of one event, with holes where the later events of its kind differ.

    Where `skeleton` allows one string to change, a template also allows the
    fields the reader ignores but a provider changes on every event (a
    `sequence_number`, an `obfuscation` padding, a `created` time, the usage
    counts so far) to hold other values of their kind. It is learnt (`learn`)
    only beyond doubt, from an object just read whole; `read` then gives the
    string of a later event made of the same text around other values, and
    `json.loads` of that event is the learnt object with that string and those
    values in their fields: nothing else can differ, so whatever the reader
    made of the learnt object it makes of the later one, but for the string.

    >>> free = {"n": int, "pad": str}
    >>> around = Template.learn('{"n":1,"text":"hi","pad":"x"}', "text", "hi", free)
    >>> around.read('{"n":2,"text":"yo","pad":"xyz"}')
    'yo'
    >>> around.read('{"n":2.5,"text":"yo","pad":"xyz"}') is None
    True
    """

    __slots__ = ("_after", "_before", "_lead", "_match", "_prefix", "_reads", "_suffix")

    def __init__(self, before: list[tuple[str, int]], after: list[tuple[int, str]]) -> None:
        # The text up to the string's opening quote: the fixed texts and the free
        # holes between them (`before`: each text and the hole after it, the last
        # one the string's), and after its closing quote (`after`: each hole and
        # the text after it, the first hole the string's).
        self._before, self._after = before, after
        # The fixed text before and after the string (`around`, when there are no free holes).
        self._prefix, self._suffix = before[0][0], after[-1][1]
        # The holes between the prefix and the string, each with the text after it.
        self._lead = [(kind, text) for (_, kind), (text, _) in pairwise(before)]
        self._reads = 0
        self._match: Callable[[str], re.Match[str] | None] | None = None

    @classmethod
    def learn(
        cls, data: object, key: str, value: str, free: dict[str, type] | None = None
    ) -> Template | None:
        """The template of `data`, whose `key` held the non-empty string `value`, if beyond doubt.

        `free` names the fields that may hold another value of their kind
        (`int` or `str`) in a later event; each that `data` has becomes a
        hole. Beyond doubt means: `data` is a plain `str` (not a cut last
        event); `"key"` and each free field it has are written once, as keys
        whose values are of their kind (an integer of at most 640 digits,
        not a number with a fraction; a string); no escape outside the holes (so no key spelled
        two ways); and the string at `key` reads back as `value`. Else None.
        """
        if not value or type(data) is not str:
            return None
        holes: list[tuple[int, int, int]] = []
        for quoted, kind in _fields(key, free):
            at = data.find(quoted)
            if at < 0:
                if kind == _TEXT:
                    return None
                continue  # a free field this event does not have: none later either
            at += len(quoted)
            if data.find(quoted, at) >= 0:
                return None  # written twice
            colon = _colon(data, at)
            if colon is None:
                return None
            at = colon.end()
            if kind == _INTEGER:
                number = _integer(data, at)
                if number is None:
                    return None
                end = number.end()
                if data[end : end + 1] in (".", "e", "E"):
                    return None  # a number with a fraction or an exponent
            else:
                if data[at : at + 1] != '"':
                    return None
                try:
                    read, end = _scanstring(data, at + 1)
                except ValueError:
                    return None
                if kind == _TEXT:
                    if read != value:
                        return None
                    at += 1  # the string's text, from after its quote (to after the closing one)
            holes.append((at, end, kind))
        holes.sort()
        # Each hole with the fixed text before it, and the text after the last one.
        texts: list[tuple[str, int]] = []
        at = 0
        for start, end, kind in holes:
            if start < at:
                return None  # holes that overlap
            texts.append((data[at:start], kind))
            at = end
        rest = data[at:]
        if "\\" in data and ("\\" in rest or any("\\" in text for text, _ in texts)):
            return None
        split = next(i for i, (_, kind) in enumerate(texts) if kind == _TEXT)
        before = texts[: split + 1]
        after = [(kind, text) for (_, kind), (text, _) in pairwise(texts[split:])]
        after.append((texts[-1][1], rest))
        return cls(before, after)

    @property
    def around(self) -> tuple[str, str]:
        """A template without free holes as `skeleton`'s (prefix, suffix); else `ValueError`."""
        if len(self._before) + len(self._after) > 2:
            raise ValueError("this template has free holes: no fixed prefix and suffix")
        return self._prefix, self._suffix

    def read(self, data: object) -> str | None:
        """The string at the template's key in `data` if `data` fills the template in, else None.

        The first reads go part by part (`_read_parts`: each fixed text
        compared with `startswith`, each hole matched by its kind's compiled
        pattern); after `_COMPILE_AT` of them, the template's one pattern
        (`_compile`) reads the whole event at once, which is faster, but costs
        its compiling. The two read alike: the holes' patterns are the same,
        and each is followed by fixed text it cannot match (a closing quote,
        the JSON after a number), so matching part by part takes what the
        whole pattern takes.
        """
        if type(data) is not str:
            return None
        match = self._match
        if match is None:
            self._reads += 1
            if self._reads < _COMPILE_AT:
                return self._read_parts(data)
            match = self._compile()
        found = match(data)
        if found is None:
            return None
        text: str = found[1]
        if "\\" in text:
            return _scanstring(data, found.start(1))[0]
        return text

    def _read_parts(self, data: str) -> str | None:
        """`read`, part by part (no pattern of the template's own to compile)."""
        prefix = self._prefix
        if not (data.startswith(prefix) and data.endswith(self._suffix)):
            return None  # (another kind of event mostly ends otherwise: told at once)
        at = len(prefix)
        for kind, text in self._lead:
            hole = _HOLES[kind](data, at)
            if hole is None or not data.startswith(text, hole.end()):
                return None
            at = hole.end() + len(text)
        found = _string_text(data, at)
        if found is None:
            return None
        start, at = at, found.end()
        for kind, text in self._after:
            if kind != _TEXT:
                hole = _HOLES[kind](data, at)
                if hole is None:
                    return None
                at = hole.end()
            if not data.startswith(text, at):
                return None
            at += len(text)
        if at != len(data):
            return None
        string: str = found[1]
        return _scanstring(data, start)[0] if "\\" in string else string

    def _compile(self) -> Callable[[str], re.Match[str] | None]:
        """The template's one pattern, compiled: `read` from now on (see `read`)."""
        pattern = "".join(re.escape(text) + _PATTERNS.get(kind, "") for text, kind in self._before)
        pattern += _STRING_TEXT + '"'
        pattern += "".join(_PATTERNS.get(kind, "") + re.escape(text) for kind, text in self._after)
        match = self._match = re.compile(pattern).fullmatch
        return match


class Budget:
    """How often a decoder learns a `Template`: not on its first four offers, then as it may.

    An offer is an event the decoder read whole that could teach a template
    (`take`, asked right then). The first `wait` offers (four) teach none:
    learning costs about a whole reading of the event and pays back only
    after a few reads by the template, so a short stream (the many requests
    of a few events each) never pays for it. From the fifth offer on, four
    learn, then one in sixteen: a stream whose events never repeat their JSON
    (so no template pays, and every event is read whole and offered) costs
    next to nothing more. A skeleton (Anthropic's, Cohere's), learnt again
    after every event that forgets it, only waits (`waited`).
    """

    __slots__ = ("learnt", "offers")

    #: The offers that teach nothing, at the start of a stream.
    wait: ClassVar[int] = 4

    def __init__(self) -> None:
        self.learnt = 0
        self.offers = 0

    def waited(self) -> bool:
        """Whether the first `wait` offers have passed (counting this one as an offer).

        For a skeleton (`skeleton`) that is learnt again after every event
        that forgets it: the wait alone, not `take`'s one in sixteen.
        """
        if self.offers >= self.wait:
            return True
        self.offers += 1
        return False

    def take(self) -> bool:
        """Whether this offer may teach a template (and if so, count it)."""
        self.offers += 1
        offers = self.offers - self.wait
        if offers <= 0 or (self.learnt >= 4 and offers < 16 * self.learnt):
            return False
        self.learnt += 1
        return True


#: A key's colon, with the JSON whitespace around it.
_colon: Callable[[str, int], re.Match[str] | None] = re.compile(r"[ \t\r\n]*:[ \t\r\n]*").match

#: `_fields`'s answers: (key, id of free) -> (free, its fields).
_FIELDS: dict[tuple[str, int], tuple[object, list[tuple[str, int]]]] = {}


def _fields(key: str, free: dict[str, type] | None) -> list[tuple[str, int]]:
    """`Template.learn`'s fields, quoted, with their kinds: `key`'s string, then each free one.

    Kept per `free` (a decoder's module constant), which the entry holds, so
    its id stays its own.
    """
    found = _FIELDS.get((key, id(free)))
    if found is None or found[0] is not free:
        fields = [(f'"{key}"', _TEXT)]
        for name, type_ in (free or {}).items():
            fields.append((f'"{name}"', _INTEGER if type_ is int else _STRING))
        if len(_FIELDS) >= 64:
            _FIELDS.clear()  # free dicts made anew for each call: keep none for long
        found = _FIELDS[key, id(free)] = (free, fields)
    return found[1]


def stdlib_loads(data: str) -> JSON:
    """`json.loads` (with the fast paths on, the direct scanner first: see `rxstream._fast`)."""
    if enabled():
        return scan_loads(data)
    return json.loads(data)


def load_json(data: str | bytes) -> JSON:
    """Decode JSON text; raise `ValueError` for anything that is not JSON (deep nesting too)."""
    return load_with(data, loaders()[0])


def load_with(data: str | bytes, fast: Callable[[str], JSON] | None) -> JSON:
    """`load_json` with the given fast loader first (None: the standard library only)."""
    if isinstance(data, bytes | bytearray):
        data = bytes(data).decode("utf-8", "replace")
    try:
        if fast is not None:
            try:
                return fast(data)
            except (ValueError, TypeError):
                # The standard library has the last word (and the message); it also
                # takes the `str` subclasses msgspec refuses (`lines.Unterminated`).
                pass
        return stdlib_loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def dumps(value: JSON, *, colon: str = ":") -> str:
    """Compact JSON text as the providers write it, not ASCII-escaped (Gemini: `colon=": "`)."""
    # One encoder per separator, made once: `json.dumps` with options builds a new
    # `JSONEncoder` per call (a renderer calls this for every event it writes).
    encoder = _ENCODERS.get(colon)
    if encoder is None:
        encoder = _ENCODERS[colon] = json.JSONEncoder(separators=(",", colon), ensure_ascii=False)
    return encoder.encode(value)


_ENCODERS: dict[str, json.JSONEncoder] = {}

#: A text no delta holds (NUL is escaped in JSON): a renderer writes it where a
#: delta's text goes, to learn the JSON around the text (`text_halves`).
TEXT_MARK = "\x00rxstream-text\x00"
_MARK_JSON = encode_basestring(TEXT_MARK)


def text_halves(written: str) -> tuple[str, str]:
    """The JSON `dumps` wrote around `TEXT_MARK` in `written`: (before, after).

    A renderer's template for an event that differs only by its text (a text
    delta's event): `before + encode_basestring(text) + after` is what `dumps`
    writes for the same payload with `text` in place of the mark, since
    `dumps` writes every string with `encode_basestring` (`ensure_ascii=False`).

    >>> text_halves(dumps({"a": 1, "text": TEXT_MARK}))
    ('{"a":1,"text":', '}')
    """
    before, mark, after = written.partition(_MARK_JSON)
    if not mark or _MARK_JSON in after:  # pragma: no cover - dumps' own rule
        raise AssertionError(f"no one place for the text in {written!r}")
    return before, after


def json_kind(value: JSON) -> str:
    """The JSON name of a decoded value's type, for messages.

    >>> json_kind(1.5), json_kind(True), json_kind(None), json_kind([])
    ('number', 'boolean', 'null', 'array')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__  # pragma: no cover - json.loads makes no other types


class ShapeError(ValueError):
    """A decoded field has the wrong JSON type (raised inside a decoder, reported by `feed`).

    The decoder that knows the item's text raises `MalformedChunkError` (naming
    its dialect) in its place, with `reason` as the message.

    Args:
        path: where, as a JSON path (`delta.text`, `choices[0].delta.content`).
        expected: what was expected, in words (`"a string"`).
        value: what arrived.

    Attributes:
        path: the path given.
        reason: the message, e.g. `"choices[0].delta.content is a JSON number,
            not a string, an array or null"`.

    >>> ShapeError("choices", "an array or null", 1).reason
    'choices is a JSON number, not an array or null'
    """

    def __init__(self, path: str, expected: str, value: JSON) -> None:
        self.path = path
        self.reason = f"{path} is a JSON {json_kind(value)}, not {expected}"
        super().__init__(self.reason)


#: What a stream without an answer lacked, in words (for `EmptyStreamError` messages).
NO_ANSWER = "no text, reasoning, refusal, tool call or finish"


def gives_answer(items: Iterable[object]) -> bool:
    """Whether any of the deltas is (part of) an answer, by the rule of `EmptyStreamError`.

    An answer is anything the model produced, or its finish: a non-empty
    `TextDelta`, `ReasoningDelta` or `RefusalDelta`, a `ToolCallDelta`, a
    citation, a server-side tool call or result, reasoning state, a `Finish`
    (whatever its reason: the provider says why the answer ended, even an
    empty one). `Usage` and `Metadata` are not.

    >>> from rxstream.models import Finish
    >>> gives_answer([Metadata({"id": "m"}), Usage(1, 0, 1)]), gives_answer([Finish("stop")])
    (False, True)
    """
    for item in items:
        kind = type(item)
        if kind is TextDelta or kind is ReasoningDelta or kind is RefusalDelta:
            if item.text:  # type: ignore[attr-defined]
                return True
        elif kind is not Usage and kind is not Metadata:
            return True
    return False


#: How much of the cut text a truncation message quotes (its end, where the cut is).
_TAIL = 120


def truncation(item: object, dialect: str | None) -> TruncatedStreamError | None:
    """The `TruncatedStreamError` for an item the stream cut short, or None when it was not.

    A decoder calls it where it would raise `MalformedChunkError` for the
    item, and raises the error it returns instead (chained to the malformed
    one). Only what the cut broke counts: text that is whole JSON all the
    same (a last event that merely lacks its blank line) was not cut short,
    so what is wrong with it is its own fault (None). The message says where
    the stream stopped and quotes the end of what arrived (bounded).

    >>> from rxstream.core.lines import Unterminated
    >>> print(truncation(Unterminated('{"done":fal'), "ollama"))
    the ollama stream ended in the middle of a line (no line end followed it): '{"done":fal'
    """
    text = cut_short(item)
    if text is None:
        return None
    try:
        if type(text) is Cut:  # its `event:` line was cut: a cut whatever the data holds
            raise ValueError("cut")
        json.loads(text)
    except ValueError:
        pass  # not whole: the cut broke it
    except RecursionError:
        return None  # too deep to tell, which the decoder reports
    else:
        return None
    where = (
        "a line (no line end followed it)"
        if isinstance(item, str)
        else "an event (no blank line ended it)"
    )
    tail = str(text) if len(text) <= _TAIL else "..." + text[1 - _TAIL :]
    stream = f"the {dialect} stream" if dialect else "the stream"
    return TruncatedStreamError(f"{stream} ended in the middle of {where}: {tail!r}")
