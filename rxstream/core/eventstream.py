"""Cut AWS event-stream bytes into messages (`application/vnd.amazon.eventstream`).

Input: `bytes` chunks, cut anywhere. Output: `EventStreamMessage(headers,
payload)`, one per message. `encode_message` is the way back.
`EventStreamSplitter` cuts the same input into whole messages left as bytes,
undecoded, for whoever passes a stream on and rewrites some of its messages.

A message, all integers big-endian::

    uint32 total_length     the whole message, both checksums included (>= 16)
    uint32 headers_length
    uint32 prelude_crc      CRC32 of the 8 bytes before it
    headers                 headers_length bytes
    payload                 total_length - headers_length - 16 bytes
    uint32 message_crc      CRC32 of everything before it

A header is `name_length: uint8`, the name (UTF-8), `type: uint8` and a value
by type: 0 true, 1 false (no value bytes), 2 byte (int8), 3 short (int16),
4 int (int32), 5 long (int64), 6 bytes (uint16 length + bytes), 7 string
(uint16 length + UTF-8), 8 timestamp (int64, milliseconds since the epoch),
9 UUID (16 bytes).

Invariants:

- The output is the same however the input is chunked.
- The prelude checksum is checked as soon as the 12 prelude bytes are there,
  before `total_length` is trusted, so random bytes fail at once instead of
  waiting for a message of gigabytes; a total length past `limit` fails too,
  so nothing is buffered beyond `limit` bytes.
- A bad checksum, a length that does not fit, a header running past the
  headers, an unknown header type, a duplicate header name or a name or string
  that is not UTF-8 is `MalformedChunkError`; the messages decoded before it
  are still delivered (`feed` returns them and raises with the next call, as
  `LineSplitter` does; `feed_all`, which the operator uses, raises at once with
  them already out), so the output up to an error does not depend on the
  chunking either.
- Input that ends inside a message (a partial prelude or a message shorter
  than its `total_length`) is `TruncatedStreamError` at `close()`.
- Linear in the input: a partial message is kept in one buffer that only
  grows; the bytes after a decoded message are moved once.

Spec: the AWS event-stream encoding ("Event stream encoding" in the Amazon
Transcribe and S3 Select documentation; `botocore.eventstream` reads the
same), with botocore's limits: headers of at most 128 KiB, duplicate names
refused.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Mapping

from .._deprecate import deprecated_arguments
from .._fast import constructor
from ..errors import MalformedChunkError, TruncatedStreamError
from ..models import EventStreamMessage
from .pipeline import Handoff

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_HEADERS_LENGTH",
    "MIN_LENGTH",
    "EventStreamParser",
    "EventStreamSplitter",
    "encode_message",
]

#: The longest message accepted by default, both checksums included: 32 MiB
#: (botocore accepts payloads up to 24 MiB with up to 128 KiB of headers).
DEFAULT_LIMIT = 33_554_432

#: The most header bytes a message may carry (botocore's limit).
MAX_HEADERS_LENGTH = 131_072

#: The shortest message: the 12-byte prelude and the 4-byte message checksum.
MIN_LENGTH = 16

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
# The fixed-size header values, by type.
_FIXED = {
    2: struct.Struct(">b"),
    3: struct.Struct(">h"),
    4: struct.Struct(">i"),
    5: struct.Struct(">q"),
    8: struct.Struct(">q"),
}
_TYPE_NAMES = {
    0: "true",
    1: "false",
    2: "byte",
    3: "short",
    4: "int",
    5: "long",
    6: "bytes",
    7: "string",
    8: "timestamp",
    9: "uuid",
}
# How many bytes of a broken message an error keeps.
_QUOTE = 256
# How many distinct header blocks a parser remembers (Bedrock uses about ten),
# and the largest it remembers: at most 64 KiB held.
_KNOWN_HEADERS = 64
_KNOWN_SIZE = 1024

HeaderValue = str | bytes | int | bool

_message: Callable[[dict[str, HeaderValue], bytes], EventStreamMessage] = constructor(
    EventStreamMessage
)


class EventStreamParser:
    """Cut `bytes` chunks into AWS event-stream messages (see the module docstring).

    Args:
        frame_limit: the longest message accepted, in bytes, both checksums
            included (default 32 MiB).

    Raises:
        TypeError: `limit` is not an int.
        ValueError: `limit` is below the 16 bytes of an empty message.

    >>> data = encode_message({":event-type": "messageStart"}, b'{"role":"assistant"}')
    >>> parser = EventStreamParser()
    >>> parser.feed(data[:10])
    []
    >>> parser.feed(data[10:])
    [EventStreamMessage(headers={':event-type': 'messageStart'}, payload=b'{"role":"assistant"}')]
    >>> parser.close()
    []
    """

    __slots__ = ("_buf", "_error", "_known", "_limit", "_need", "_offset", "_pairs", "_state")
    #: What it hands on, by mode (`rxstream.core.pipeline.Handoff`):
    #: `EventStreamMessage`s unfused; fused in front of the Bedrock decoder,
    #: each message as a `(headers, payload)` tuple (`MESSAGE_PAIRS`).
    hands = (Handoff.FRAMES, Handoff.MESSAGE_PAIRS)

    @deprecated_arguments(renamed={"limit": "frame_limit"})
    def __init__(self, *, frame_limit: int = DEFAULT_LIMIT) -> None:
        limit = frame_limit
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"frame_limit must be an int, got {type(limit).__name__}")
        if limit < MIN_LENGTH:
            raise ValueError(f"frame_limit must be at least {MIN_LENGTH} bytes, got {limit!r}")
        self._limit = limit
        # The start of a message not complete yet (never a whole message).
        self._buf = bytearray()
        # The checked total length of the message in `_buf` (0: prelude not checked).
        self._need = 0
        # Where `_buf` starts in the stream, for the errors.
        self._offset = 0
        # A broken message found after good ones in one chunk: raised by the next call.
        self._error: MalformedChunkError | None = None
        # Header blocks already parsed, by their bytes.
        self._known: dict[bytes, dict[str, HeaderValue]] = {}
        # Give each message as a bare `(headers, payload)` tuple (`_hand(Handoff.MESSAGE_PAIRS)`).
        self._pairs = False
        self._state = "open"

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[EventStreamMessage]:
        """Take the next chunk of the stream; return the messages it completes.

        Args:
            chunk: the next bytes, cut anywhere.

        Returns:
            The completed messages, in order (possibly none).

        Raises:
            MalformedChunkError: a message is broken (see the module
                docstring). Messages completed before it in the same chunk
                are returned first and the error is raised by the next
                `feed` or `close`.
            TypeError: the chunk is not bytes.
            RuntimeError: the parser was closed or has failed.
        """
        self._check_open()
        out: list[EventStreamMessage] = []
        try:
            self._take(chunk, out)
        except MalformedChunkError as exc:
            if not out:
                raise
            self._error = exc
        return out

    def feed_all(
        self, chunks: Iterable[bytes | bytearray | memoryview], out: list[EventStreamMessage]
    ) -> None:
        """`out += feed(chunk)` for each chunk, in one call, raising at once.

        What the fused operator chain calls: unlike `feed`, a broken message
        is raised right away, with the messages before it already in `out`.
        """
        for chunk in chunks:
            self._check_open()
            self._take(chunk, out)

    def _take(self, chunk: bytes | bytearray | memoryview, out: list[EventStreamMessage]) -> None:
        """Append the messages `chunk` completes to `out`; on error, fail and raise."""
        if not isinstance(chunk, bytes | bytearray | memoryview):
            self._state = "failed"
            raise TypeError(
                f"EventStreamParser takes bytes chunks, got {type(chunk).__name__}"
                + (" (read the body with body='bytes')" if isinstance(chunk, str) else "")
            )
        if not chunk:
            return
        buf = self._buf
        if buf:
            buf += chunk
            if len(buf) < (self._need or 12):
                return  # still inside the same message: nothing to look at again
            # Read from `bytes`: slices of it are the cheapest copies (a CRC's
            # input, a header block to look up, a payload), and every byte is
            # copied here once, when the message it belongs to is complete.
            data = bytes(buf)
        else:
            data = chunk if isinstance(chunk, bytes) else bytes(chunk)
        try:
            pos = self._messages(data, out)
        except MalformedChunkError:
            self._state = "failed"
            raise
        if buf:
            del buf[:pos]
        elif pos < len(data):
            buf += memoryview(data)[pos:]
        self._offset += pos

    def close(self) -> list[EventStreamMessage]:
        """End the input.

        Returns:
            `[]`: every complete message was returned by `feed`.

        Raises:
            TruncatedStreamError: the input ended inside a message.
            MalformedChunkError: a broken message found by the last `feed`.
            RuntimeError: the parser was already closed or has failed.
        """
        self._check_open()
        self._state = "closed"
        left = len(self._buf)
        if not left:
            return []
        where = f"the event stream ended inside the message at byte {self._offset}"
        if left < 12:
            raise TruncatedStreamError(f"{where}: {left} of its 12 prelude bytes arrived")
        raise TruncatedStreamError(f"{where}: {left} of its {self._need} bytes arrived")

    def _can_hand(self, mode: Handoff) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): whether `_hand(mode)` may still be set."""
        return (
            mode is Handoff.MESSAGE_PAIRS
            and self._state == "open"
            and not self._offset
            and not self._buf
        )

    def _hand(self, mode: Handoff) -> None:
        """Fusion hook (`rxstream.core.pipeline`): give each message as `(headers, payload)`.

        Set (`mode` is `MESSAGE_PAIRS`) before any input, when the decoder
        below reads nothing of a message but its headers and its payload, and
        changes neither (it builds the message itself where it needs one).
        The headers of a header block seen before are the very dict given
        before, not a copy.
        """
        self._pairs = mode is Handoff.MESSAGE_PAIRS

    def _check_open(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._state != "open":
            raise RuntimeError(f"this EventStreamParser is {self._state}; it takes no more input")

    def _messages(self, data: bytes, out: list[EventStreamMessage]) -> int:
        """Decode the whole messages at the start of `data`; return where the rest begins."""
        pos, end = 0, len(data)
        crc32 = zlib.crc32
        prelude, checksum, message = _PRELUDE.unpack_from, _U32.unpack_from, _message
        append = out.append
        limit = min(self._limit, 2**32)
        known = self._known
        pairs = self._pairs
        need = self._need  # the first message's prelude may be checked already
        while end - pos >= 12:
            total, headers_length, prelude_crc = prelude(data, pos)
            if not need and (
                crc32(data[pos : pos + 8]) != prelude_crc
                or not MIN_LENGTH <= total <= limit
                or headers_length > total - MIN_LENGTH
                or headers_length > MAX_HEADERS_LENGTH
            ):
                raise self._bad_prelude(data, pos, total, headers_length, prelude_crc)
            if end - pos < total:
                self._need = total
                return pos
            need = 0
            stop = pos + total - 4
            (message_crc,) = checksum(data, stop)
            # The message CRC runs over the prelude too: carry on from the prelude's.
            if crc32(data[pos + 8 : stop], prelude_crc) != message_crc:
                raise self._broken(
                    data,
                    pos,
                    f"message CRC32 {message_crc:#010x} does not match the message "
                    f"({crc32(data[pos:stop]):#010x})",
                )
            start = pos + 12
            body = start + headers_length
            # A stream repeats a few header blocks byte for byte (one per event
            # type): each is parsed once, and every message gets its own copy.
            if headers_length <= _KNOWN_SIZE:
                raw = data[start:body]
                headers = known.get(raw)
                if headers is None:
                    headers = self._headers(data, pos, start, body)
                    if len(known) < _KNOWN_HEADERS:
                        known[raw] = headers
            else:
                headers = self._headers(data, pos, start, body)
            if pairs:
                append((headers, data[body:stop]))  # type: ignore[arg-type]
            else:
                append(message(headers.copy(), data[body:stop]))
            pos += total
        self._need = 0
        return pos

    def _bad_prelude(
        self,
        data: bytes,
        pos: int,
        total: int,
        headers_length: int,
        crc: int,
    ) -> MalformedChunkError:
        """What is wrong with a prelude that failed the checks."""
        actual = zlib.crc32(data[pos : pos + 8])
        if actual != crc:
            why = f"prelude CRC32 {crc:#010x} does not match the prelude ({actual:#010x})"
        elif total < MIN_LENGTH:
            why = f"total length {total} is below the minimum of {MIN_LENGTH}"
        elif total > self._limit:
            why = f"total length {total} is over the limit of {self._limit}"
        elif headers_length > total - MIN_LENGTH:
            why = f"headers length {headers_length} does not fit in a message of {total} bytes"
        else:
            why = f"headers length {headers_length} is over the limit of {MAX_HEADERS_LENGTH}"
        return self._broken(data, pos, why)

    def _headers(
        self, data: bytes | bytearray, pos: int, i: int, end: int
    ) -> dict[str, HeaderValue]:
        headers: dict[str, HeaderValue] = {}
        while i < end:
            size = data[i]
            i += 1
            if i + size + 1 > end:
                raise self._broken(data, pos, f"a header name runs past the headers (byte {i})")
            name = self._text(data, pos, i, i + size, "a header name")
            i += size
            kind = data[i]
            i += 1
            value: HeaderValue
            if kind <= 1:
                value = kind == 0
            elif kind in _FIXED:
                fixed = _FIXED[kind]
                if i + fixed.size > end:
                    raise self._runs_past(data, pos, name, kind)
                (value,) = fixed.unpack_from(data, i)
                i += fixed.size
            elif kind in (6, 7):
                if i + 2 > end:
                    raise self._runs_past(data, pos, name, kind)
                (length,) = _U16.unpack_from(data, i)
                i += 2
                if i + length > end:
                    raise self._runs_past(data, pos, name, kind)
                if kind == 7:
                    value = self._text(data, pos, i, i + length, f"header {name!r}")
                else:
                    value = bytes(data[i : i + length])
                i += length
            elif kind == 9:
                if i + 16 > end:
                    raise self._runs_past(data, pos, name, kind)
                value = bytes(data[i : i + 16])
                i += 16
            else:
                raise self._broken(data, pos, f"header {name!r} has an unknown type {kind}")
            if name in headers:
                raise self._broken(data, pos, f"header {name!r} appears twice")
            headers[name] = value
        return headers

    def _text(self, data: bytes | bytearray, pos: int, start: int, end: int, what: str) -> str:
        try:
            return bytes(data[start:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise self._broken(data, pos, f"{what} is not UTF-8") from None

    def _runs_past(
        self, data: bytes | bytearray, pos: int, name: str, kind: int
    ) -> MalformedChunkError:
        return self._broken(
            data, pos, f"the {_TYPE_NAMES[kind]} value of header {name!r} runs past the headers"
        )

    def _broken(self, data: bytes | bytearray, pos: int, reason: str) -> MalformedChunkError:
        return MalformedChunkError(
            f"event-stream message at byte {self._offset + pos}: {reason}",
            bytes(data[pos : pos + _QUOTE]),
        )


def encode_message(headers: Mapping[str, HeaderValue], payload: bytes = b"") -> bytes:
    """Encode one AWS event-stream message (the inverse of `EventStreamParser`).

    Header values are typed by their Python type: `bool` as true/false,
    `int` as an int (32 bits) or a long (64 bits) when it does not fit, `str`
    as a string, `bytes` as a byte array. (Timestamps and UUIDs decode to
    `int` and `bytes` and are encoded back as a long and a byte array.)

    Args:
        headers: the headers, in order.
        payload: the payload bytes.

    Returns:
        The message, both checksums included.

    Raises:
        ValueError: a header name over 255 bytes, a string or byte value over
            65,535 bytes, an int outside 64 bits, or headers over 128 KiB.
        TypeError: a header value of another type.

    >>> message = encode_message({":message-type": "event"}, b"{}")
    >>> len(message), EventStreamParser().feed(message)
    (40, [EventStreamMessage(headers={':message-type': 'event'}, payload=b'{}')])
    """
    parts: list[bytes] = []
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        if len(raw_name) > 255:
            raise ValueError(f"header name {name[:40]!r}... is over 255 bytes")
        parts.append(bytes((len(raw_name),)) + raw_name)
        if isinstance(value, bool):
            parts.append(b"\x00" if value else b"\x01")
        elif isinstance(value, int):
            if -(2**31) <= value < 2**31:
                parts.append(b"\x04" + _FIXED[4].pack(value))
            elif -(2**63) <= value < 2**63:
                parts.append(b"\x05" + _FIXED[5].pack(value))
            else:
                raise ValueError(f"header {name!r}: {value} does not fit in 64 bits")
        elif isinstance(value, str | bytes | bytearray):
            raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            if len(raw) > 65_535:
                raise ValueError(f"header {name!r}: a value of {len(raw)} bytes is over 65,535")
            parts.append((b"\x07" if isinstance(value, str) else b"\x06") + _U16.pack(len(raw)))
            parts.append(raw)
        else:
            raise TypeError(
                f"header {name!r}: a value must be str, bytes, int or bool, "
                f"got {type(value).__name__}"
            )
    head = b"".join(parts)
    if len(head) > MAX_HEADERS_LENGTH:
        raise ValueError(f"the headers take {len(head)} bytes, over {MAX_HEADERS_LENGTH}")
    total = MIN_LENGTH + len(head) + len(payload)
    prelude = struct.pack(">II", total, len(head))
    prelude += _U32.pack(zlib.crc32(prelude))
    message = b"".join((prelude, head, payload))
    return message + _U32.pack(zlib.crc32(message))


class EventStreamSplitter:
    """Cut `bytes` chunks at AWS event-stream message boundaries, without decoding the messages.

    For whoever must look at (and perhaps rewrite) whole messages while
    passing the stream on: each output item is the bytes of one whole message,
    exactly as they arrived, so the items joined are the input. Only the
    prelude is checked (its CRC32, the lengths, `limit`: the same checks as
    `EventStreamParser`, so that `total_length` can be trusted); the message
    CRC32 and the headers are left to the parser.

    A prelude that fails the checks cannot tell where its message ends, so
    nothing after it can be cut: `broken` turns True and the splitter keeps
    the bytes from that prelude on, returning no more messages. `rest()` hands
    out (and forgets) the bytes held that are not a whole message: the start
    of an unfinished message, or, once broken, everything from the bad
    prelude on.

    Output does not depend on the chunking; nothing is held beyond one
    message (at most `limit` bytes), except after a broken prelude, where what
    arrives is held until `rest()` takes it.

    Args:
        frame_limit: the longest message, in bytes, both checksums included
            (default 32 MiB); a longer one counts as a broken prelude.

    Raises:
        TypeError: `limit` is not an int.
        ValueError: `limit` is below the 16 bytes of an empty message.

    >>> data = encode_message({":event-type": "a"}) + encode_message({":event-type": "b"})
    >>> splitter = EventStreamSplitter()
    >>> [len(m) for m in splitter.feed(data[:40])], [len(m) for m in splitter.feed(data[40:])]
    ([32], [32])
    >>> splitter.close()
    []
    """

    __slots__ = ("_broken", "_buf", "_limit", "_need", "_offset", "_state")

    @deprecated_arguments(renamed={"limit": "frame_limit"})
    def __init__(self, *, frame_limit: int = DEFAULT_LIMIT) -> None:
        limit = frame_limit
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"frame_limit must be an int, got {type(limit).__name__}")
        if limit < MIN_LENGTH:
            raise ValueError(f"frame_limit must be at least {MIN_LENGTH} bytes, got {limit!r}")
        self._limit = min(limit, 2**32)
        # What is not handed out yet: the start of one message (or, broken, the rest).
        self._buf = bytearray()
        # The checked total length of the message in `_buf` (0: prelude not checked).
        self._need = 0
        # Where `_buf` starts in the stream, for the errors.
        self._offset = 0
        self._broken = False
        self._state = "open"

    @property
    def broken(self) -> bool:
        """Whether a prelude failed its checks (nothing after it is cut any more)."""
        return self._broken

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[bytes]:
        """Take the next chunk; return the whole messages it completes, as bytes.

        Raises:
            TypeError: the chunk is not bytes.
            RuntimeError: the splitter was closed.
        """
        if self._state != "open":
            raise RuntimeError(f"this EventStreamSplitter is {self._state}; it takes no more input")
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise TypeError(f"EventStreamSplitter takes bytes chunks, got {type(chunk).__name__}")
        buf = self._buf
        buf += chunk
        if self._broken or len(buf) < (self._need or 12):
            return []  # inside the same message (or past a broken prelude): nothing to cut
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while end - pos >= 12:
            if not self._need:
                total, headers_length, crc = _PRELUDE.unpack_from(buf, pos)
                if (
                    zlib.crc32(buf[pos : pos + 8]) != crc
                    or not MIN_LENGTH <= total <= self._limit
                    or headers_length > min(total - MIN_LENGTH, MAX_HEADERS_LENGTH)
                ):
                    self._broken = True
                    break
                self._need = total
            if end - pos < self._need:
                break
            out.append(bytes(buf[pos : pos + self._need]))
            pos += self._need
            self._need = 0
        del buf[:pos]
        self._offset += pos
        return out

    def rest(self) -> bytes:
        """Hand out the bytes held that are not a whole message, and forget them.

        Before `broken`, that is the start of an unfinished message (the
        splitter then expects the message's next bytes, so call it only at the
        end of the input); once broken, everything that arrived from the bad
        prelude on.
        """
        rest = bytes(self._buf)
        self._offset += len(rest)
        self._buf.clear()
        if not self._broken:
            self._need = 0
        return rest

    def close(self) -> list[bytes]:
        """End the input.

        Returns:
            `[]`: every whole message was returned by `feed`.

        Raises:
            MalformedChunkError: a prelude failed its checks (and `rest()`
                did not take what followed it).
            TruncatedStreamError: the input ended inside a message.
            RuntimeError: the splitter was already closed.
        """
        if self._state != "open":
            raise RuntimeError(f"this EventStreamSplitter is {self._state}; it takes no more input")
        self._state = "closed"
        left = len(self._buf)
        if not left:
            return []
        where = f"the event stream's message at byte {self._offset}"
        if self._broken:
            raise MalformedChunkError(
                f"{where} has a broken prelude (checksum, lengths or limit)",
                bytes(self._buf[:_QUOTE]),
            )
        if left < 12:
            raise TruncatedStreamError(f"{where} was cut: {left} of its 12 prelude bytes arrived")
        raise TruncatedStreamError(f"{where} was cut: {left} of its {self._need} bytes arrived")
