"""Redact the credentials a server echoes in a body handed out as raw bytes.

A source that cuts lines redacts each line (`_body.BodyReader`); one that
hands out the body's bytes (`body="bytes"`) does it here, by the content type:

- An AWS event stream (`application/vnd.amazon.eventstream`, Bedrock): each
  message carries its length and two CRC32 checksums, so its bytes cannot
  simply be replaced. The body is cut at message boundaries
  (`EventStreamSplitter`), an unfinished message held back until its last
  byte arrives (as a line is never handed out before its end). A message
  that holds a credential is decoded (`EventStreamParser`), its payload and
  its string and byte-array header values are redacted, and it is encoded
  again (`encode_message`: fresh lengths and checksums), so
  `rs.eventstream_frames()` reads it as before, minus the key. The string
  literals of a JSON payload are decoded first, so a key sent `\\u`-escaped
  is found too. Every other message goes on byte for byte.
- Any other body: the credentials are replaced in the bytes, also one split
  across two blocks (a block's last `longest - 1` bytes wait for the next).
- A body without a content type is taken for an event stream when its first
  12 bytes are a valid prelude (a CRC32 that random bytes match once in four
  billion), else for any other body.

A request without credentials gets no redactor at all (nothing changes, at no
cost). With one, an event stream costs one substring test per block's worth
of whole messages (a message is looked at alone only when its block holds a
credential or a `\\u` escape), and other bodies one test per block.
"""

from __future__ import annotations

import json
import re
import zlib

from ..core.eventstream import (
    DEFAULT_LIMIT,
    EventStreamParser,
    EventStreamSplitter,
    encode_message,
)
from ..errors import MalformedChunkError
from ._http import BodyKind
from .credentials import REDACTED, Credentials

__all__ = ["BytesRedactor", "EventStreamRedactor", "UntypedRedactor", "raw_redactor"]

_REDACTED = REDACTED.encode("ascii")

# A JSON string literal (with its escapes), as the unrolled loop that stays linear.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)

_HeaderValue = str | bytes | int | bool


def raw_redactor(
    credentials: Credentials, kind: BodyKind | None
) -> EventStreamRedactor | BytesRedactor | UntypedRedactor | None:
    """The redactor for a raw body of `kind`; None when the request carried no credential."""
    if not credentials:
        return None
    if kind == "eventstream":
        return EventStreamRedactor(credentials)
    if kind is None:
        return UntypedRedactor(credentials)
    return BytesRedactor(credentials)


def _pattern(credentials: Credentials) -> re.Pattern[bytes]:
    # `forms` is longest first, so "Bearer X" goes whole before X alone.
    return re.compile(b"|".join(map(re.escape, credentials.forms)))


def _mask(match: re.Match[bytes]) -> bytes:
    return b"*" * len(match[0])


def _redacted(match: re.Match[bytes]) -> bytes:
    return _REDACTED


class BytesRedactor:
    """Replace every credential in a body's blocks, also one split across two blocks.

    Args:
        credentials: what to replace.
        mask: replace each credential by as many `*` as it has bytes (the
            length of the stream stays the same) instead of `[redacted]`.
    """

    __slots__ = ("_credentials", "_overlap", "_pattern", "_replace", "_tail")

    def __init__(self, credentials: Credentials, *, mask: bool = False) -> None:
        self._credentials = credentials
        self._pattern = _pattern(credentials)
        self._replace = _mask if mask else _redacted
        # The end of the last block, held back: it may start a credential.
        self._overlap = max(credentials.longest - 1, 0)
        self._tail = b""

    def feed(self, block: bytes) -> list[bytes]:
        """Take the next block; return what of it can go on (redacted), if anything."""
        window = self._tail + block if self._tail else block
        # Whatever starts before `cut` ends inside the window, or is no credential.
        cut = max(len(window) - self._overlap, 0)
        if not self._credentials.found_in(window):
            self._tail = window[cut:]
            return [window[:cut]] if cut else []
        parts: list[bytes] = []
        start = 0
        for match in self._pattern.finditer(window):
            if match.start() >= cut:
                break
            parts += (window[start : match.start()], self._replace(match))
            start = match.end()
            cut = max(cut, start)
        parts.append(window[start:cut])
        self._tail = window[cut:]
        out = b"".join(parts)
        return [out] if out else []

    def close(self) -> list[bytes]:
        """The end of the body: what was held back, redacted."""
        tail, self._tail = self._tail, b""
        out = self._pattern.sub(self._replace, tail)
        return [out] if out else []


class EventStreamRedactor:
    """Redact the credentials in an AWS event stream's messages, keeping it a valid stream.

    See the module docstring. A message that cannot be decoded (a checksum
    or header already broken), and everything after a prelude that fails its
    checks, cannot be encoded again: their credentials are masked byte for
    byte instead (see `_undecodable`).
    """

    __slots__ = ("_credentials", "_pattern", "_rest", "_splitter")

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials
        self._pattern = _pattern(credentials)
        # Messages over the parser's default limit count as broken preludes:
        # the parser downstream (with that limit) refuses them at once anyway.
        self._splitter = EventStreamSplitter(frame_limit=DEFAULT_LIMIT)
        # After a broken prelude: the rest of the body, masked as it comes.
        self._rest: BytesRedactor | None = None

    def feed(self, block: bytes) -> list[bytes]:
        """Take the next block; return the whole messages it completes (redacted), joined."""
        if self._rest is not None:
            return self._rest.feed(block)
        whole = self._splitter.feed(block)
        out = [self._messages(whole)] if whole else []
        if self._splitter.broken:
            self._rest = BytesRedactor(self._credentials, mask=True)
            out += self._rest.feed(self._splitter.rest())
        return out

    def close(self) -> list[bytes]:
        """The end of the body: an unfinished message goes on (masked), for the parser to report."""
        if self._rest is not None:
            return self._rest.close()
        rest = self._splitter.rest()
        # Cut short, it cannot be decoded; the parser says so (TruncatedStreamError).
        return [self._pattern.sub(_mask, rest)] if rest else []

    def _suspect(self, data: bytes) -> bool:
        return self._credentials.found_in(data) or b"\\u" in data

    def _messages(self, whole: list[bytes]) -> bytes:
        data = whole[0] if len(whole) == 1 else b"".join(whole)
        if not self._suspect(data):
            return data
        return b"".join(map(self._message, whole))

    def _message(self, data: bytes) -> bytes:
        if not self._suspect(data):
            return data
        try:
            (message,) = EventStreamParser(frame_limit=len(data)).feed(data)
        except MalformedChunkError:
            return self._undecodable(data)
        headers = {name: self._value(value) for name, value in message.headers.items()}
        payload = self._payload(message.payload)
        if payload == message.payload and headers == message.headers:
            return data  # a `\u` escape, or bytes of a length or checksum, by chance
        try:
            return encode_message(headers, payload)
        except ValueError:  # a string header pushed over 64 KiB by `[redacted]`
            return self._undecodable(data)

    def _undecodable(self, data: bytes) -> bytes:
        """`data` with each credential masked by as many `*`: same length, same framing.

        A message that cannot be decoded cannot be encoded again, yet it must
        go on: the parser downstream is to fail on it as it would have
        (`MalformedChunkError`, at the same byte, for the same reason). But
        that error quotes the message's first bytes, so the credentials must
        go. Masked byte for byte, the message keeps its length (its
        `total_length` still points at the next message, the offsets in the
        error stay true); and if its message checksum was right, it is made
        right again, so the error still names what was broken (a header, say)
        rather than a checksum the masking broke.
        """
        masked = self._pattern.sub(_mask, data)
        if masked != data and zlib.crc32(data[:-4]) == int.from_bytes(data[-4:], "big"):
            masked = masked[:-4] + zlib.crc32(masked[:-4]).to_bytes(4, "big")
        return masked

    def _value(self, value: _HeaderValue) -> _HeaderValue:
        if isinstance(value, str):
            return self._credentials.redact(value)
        if isinstance(value, bytes):
            return self._pattern.sub(_redacted, value)
        return value

    def _payload(self, payload: bytes) -> bytes:
        # surrogateescape: bytes that are not UTF-8 come back as they were.
        text = payload.decode("utf-8", "surrogateescape")
        if "\\" in text:
            text = _JSON_STRING.sub(self._literal, text)
        return self._credentials.redact(text).encode("utf-8", "surrogateescape")

    def _literal(self, match: re.Match[str]) -> str:
        """A JSON string literal with the credentials it says (once unescaped) redacted."""
        literal = match[0]
        if "\\" not in literal:
            return literal  # the plain redaction after this finds what it holds
        try:
            value = json.loads(literal)
        except ValueError:
            return literal
        shown = self._credentials.redact(value)
        # ASCII escapes: a lone surrogate (`\ud800`) must stay an escape.
        return literal if shown == value else json.dumps(shown)


class UntypedRedactor:
    """A body without a content type: redacted as an event stream if it opens with a prelude.

    The first 12 bytes wait until they are all there, then decide.
    """

    __slots__ = ("_credentials", "_head", "_redactor")

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials
        self._head = b""
        self._redactor: EventStreamRedactor | BytesRedactor | None = None

    def feed(self, block: bytes) -> list[bytes]:
        """Take the next block; return what can go on (see the other redactors)."""
        if self._redactor is None:
            self._head += block
            if len(self._head) < 12:
                return []
            block, self._head = self._head, b""
            self._redactor = self._choose(block)
        return self._redactor.feed(block)

    def close(self) -> list[bytes]:
        """The end of the body."""
        if self._redactor is None:
            self._redactor = BytesRedactor(self._credentials)
            return [*self._redactor.feed(self._head), *self._redactor.close()]
        return self._redactor.close()

    def _choose(self, head: bytes) -> EventStreamRedactor | BytesRedactor:
        prelude = EventStreamSplitter(frame_limit=DEFAULT_LIMIT)
        prelude.feed(head[:12])
        if prelude.broken:
            return BytesRedactor(self._credentials)
        return EventStreamRedactor(self._credentials)
