"""A request's credentials, and what of a request may be shown in an error.

`Credentials` collects the credential values of a request (its credential
headers, HTTP Basic decoded, the URL's userinfo and key parameters) and
redacts them wherever a server echoes them back: as sent, JSON-escaped
(also `\\uXXXX` for any character, and `\\/`), percent- or form-encoded,
and where an excerpt cut one in two. `shown_url` and `describe` say which
request failed without any of it.

Public for whatever shows a server's answer to a person (the CLI redacts
what it prints with it); the sources redact every error with it.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

from ..errors import EXCERPT_LIMIT, escaped, excerpt

__all__ = ["REDACTED", "Credentials", "describe", "shown_url"]

# Header and query-parameter names whose values are credentials: the usual ones
# by name, and any name that says what it holds.
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "cookie",
        "ocp-apim-subscription-key",
    }
)
_CREDENTIAL_WORDS = re.compile(r"key|token|secret|auth|passw|signature|credential|session|^sig$")

# A JSON string literal (quotes included), escapes and all.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')

#: What a redacted credential reads as.
REDACTED = "[redacted]"

# Shorter values are not worth hiding and would deface ordinary text.
_MIN_SECRET = 4


class Credentials:
    """The credential values of a request, to be redacted wherever a server echoes them.

    Collected from the headers (`Authorization`, `api-key`, `x-api-key`,
    `x-goog-api-key`, cookies and any header whose name says key, token,
    secret, auth, ...), from the URL's userinfo and query string (`?key=...`);
    for `Authorization: Bearer X`, both the whole value and `X`; for HTTP
    Basic also the decoded `user:password` and the password. Each value is
    redacted as sent and as a server may quote it back: JSON-escaped (also
    with `/` as backslash-slash), percent-encoded and form-encoded.

    >>> creds = Credentials()
    >>> creds.add_headers({"Authorization": "Bearer sk-123456"})
    >>> creds.redact("your key sk-123456 is invalid")
    'your key [redacted] is invalid'
    """

    __slots__ = ("_bytes", "_pattern", "_secrets")

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._bytes: tuple[bytes, ...] = ()

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def add_request(self, request: Any) -> None:
        """Collect the credentials of an httpx request (its headers and its URL)."""
        if request is None:
            return
        headers = getattr(request, "headers", None)
        if headers is not None:
            self.add_headers(headers)
        url = getattr(request, "url", None)
        if url is not None:
            self.add_url(str(url))

    def add_headers(self, headers: Any) -> None:
        """Collect the values of credential headers (a mapping or httpx `Headers`)."""
        items: Iterable[tuple[Any, Any]]
        multi = getattr(headers, "multi_items", None)
        items = multi() if callable(multi) else headers.items()
        for name, value in items:
            name = _text(name).lower()
            if name in _CREDENTIAL_HEADERS or _CREDENTIAL_WORDS.search(name):
                value = _text(value)
                self._add(value)
                scheme, _, token = value.partition(" ")
                token = token.strip()
                if token and scheme.isalpha():
                    self._add(token)
                    if scheme.lower() == "basic":
                        self._add_basic(token)

    def _add_basic(self, token: str) -> None:
        # HTTP Basic: a server may quote the decoded `user:password`, or the password.
        try:
            pair = base64.b64decode(token, validate=True).decode("utf-8")
        except ValueError:
            return
        self._add(pair)
        self._add(pair.partition(":")[2])

    def add_url(self, url: str) -> None:
        """Collect the values of credential query parameters and of the URL's userinfo."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return
        if parts.password:
            self._add(parts.password)
            self._add(unquote(parts.password))
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if _CREDENTIAL_WORDS.search(name.lower()):
                self._add(value)
        for piece in parts.query.split("&"):
            name, _, value = piece.partition("=")
            if _CREDENTIAL_WORDS.search(unquote(name).lower()):
                self._add(value)

    def _add(self, value: str) -> None:
        if len(value) < _MIN_SECRET or value in self._secrets:
            return
        # As sent, and as a server may quote it back: JSON-escaped (also with
        # `\/`), percent-encoded, form-encoded.
        escaped = json.dumps(value)[1:-1]
        forms = {value, escaped, escaped.replace("/", "\\/"), quote(value, safe="")}
        forms.add(quote_plus(value))
        self._secrets.update(forms)
        # Longest first, so "Bearer X" goes whole before X alone.
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered)))
        self._bytes = tuple(s.encode("utf-8", "replace") for s in ordered)

    def redact(self, text: str, *, cut: bool = False) -> str:
        """`text` with every credential replaced by `[redacted]`.

        Args:
            text: what a server sent (or an error message made of it).
            cut: `text` is the head of something longer: a credential cut in
                two at its end is redacted too.
        """
        pattern = self._pattern
        if pattern is None or not text:
            return text
        text = pattern.sub(REDACTED, text)
        if "\\" in text:
            text = self._redact_escaped(text)
        return self._redact_tail(text) if cut else text

    def _redact_escaped(self, text: str) -> str:
        """`text` with every JSON string literal that decodes to a credential redacted.

        A server may echo a key escaped in a way of its own (`\\u0073\\u006b...`
        for every character, or for some, or `\\/`): what is shown is the
        decoded string (a provider's message), so each literal holding an
        escape is decoded, redacted and written back when it held one.
        """
        pattern = self._pattern
        if pattern is None:
            return text

        def literal(match: re.Match[str]) -> str:
            found = match.group(0)
            if "\\" not in found:
                return found
            try:
                decoded = json.loads(found)
            except ValueError:
                return found
            redacted = pattern.sub(REDACTED, decoded)
            return found if redacted == decoded else json.dumps(redacted, ensure_ascii=False)

        return _JSON_STRING.sub(literal, text)

    def _redact_tail(self, text: str) -> str:
        for secret in self._secrets:
            for size in range(min(len(secret), len(text) + 1) - 1, _MIN_SECRET - 1, -1):
                if text.endswith(secret[:size]):
                    return text[:-size] + REDACTED
        return text

    def quote(self, data: bytes | str, *, complete: bool = True) -> str:
        """A bounded, redacted excerpt of a body (or its head) for an error.

        Redacted before it is cut, so a credential is never half shown.

        Args:
            data: the body, or its first bytes.
            complete: False when `data` is only the head of the body; the
                excerpt then says so instead of giving the head's length.
        """
        # A binary body (an AWS event stream read as lines) is shown escaped, all of
        # it first: redacted whole, then cut like any text.
        binary = escaped(data, len(data) * 4) if isinstance(data, bytes) else None
        if binary is not None:
            text = self.redact(binary, cut=not complete)
        else:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            text = self.redact(text, cut=not complete)
        if complete:
            return excerpt(text)
        return f"{text[:EXCERPT_LIMIT]}… (at least {len(data)} bytes)"

    def scrub(self, error: BaseException) -> BaseException:
        """`error` with credentials redacted from its message, also where an excerpt cut one.

        For errors raised below this layer from text a server sent (a line's
        head in `LineTooLongError`), whose message was cut before it could be
        redacted.
        """
        if self._pattern is None or not error.args or not isinstance(error.args[0], str):
            return error
        message = self._pattern.sub(REDACTED, error.args[0])
        for secret in self._secrets:
            for size in range(len(secret) - 1, _MIN_SECRET - 1, -1):
                message = message.replace(secret[:size] + "…", REDACTED + "…")
        error.args = (message, *error.args[1:])
        return error

    def found_in(self, data: bytes) -> bool:
        """Whether any credential occurs in `data` (a cheap test per read)."""
        return any(secret in data for secret in self._bytes)

    @property
    def longest(self) -> int:
        """The length in bytes of the longest credential (0 without any)."""
        return max(map(len, self._bytes), default=0)

    @property
    def forms(self) -> tuple[bytes, ...]:
        """Every credential in every form a server may echo it, as UTF-8 bytes, longest first."""
        return self._bytes


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    return str(value)


def shown_url(url: str) -> str:
    """`url` as it may be shown: no userinfo, query string or fragment.

    >>> shown_url("https://user:pw@host:8443/v1/chat?key=secret#x")
    'https://host:8443/v1/chat'
    """
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]


def describe(request: Any) -> str:
    """`"POST http://host:port/path"`: no query string, no credentials, never a header."""
    if request is None:
        return ""
    method = getattr(request, "method", "")
    if isinstance(method, bytes):
        method = method.decode("ascii", "replace")
    return f"{method} {shown_url(str(getattr(request, 'url', '')))}".strip()
