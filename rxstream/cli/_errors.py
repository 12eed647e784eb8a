"""How the command words two kinds of trouble in its one error line.

- `describe(error)`: a stream's error as one line; an HTML page in a body (a
  proxy's or a gateway's error page, a captive portal) is shown by its title
  (or first line of text) and its length, not as markup;
- `recording_problem(path)`: why `path` cannot be replayed (missing, a
  directory, a device), or None.
"""

from __future__ import annotations

import os
import re
import stat

__all__ = ["describe", "html_summary", "recording_problem"]

# The mark `rxstream.errors.excerpt` puts where it cut a body.
_CUT = re.compile(r"… \((\d+) (chars|bytes)\)$")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>?")
_SHOWN = 80


def html_summary(body: str) -> str | None:
    """`an HTML page "Its title" (N chars)` for a body that is an HTML page, else None.

    `body` is what an error keeps: the page whole, or its start cut by
    `rxstream.errors.excerpt` (which says the full length).

    >>> html_summary("<!DOCTYPE html><html><head><title>502 Bad Gateway</title>… (15685 chars)")
    'an HTML page "502 Bad Gateway" (15685 chars)'
    >>> html_summary('{"error": "nope"}') is None
    True
    """
    text = body.lstrip()
    if not text[:14].lower().startswith(("<!doctype html", "<html")):
        return None
    cut = _CUT.search(text)
    length = f"{cut[1]} {cut[2]}" if cut else f"{len(body)} chars"
    shown = text[: cut.start()] if cut else text
    title = _TITLE.search(shown)
    if title is not None:
        what = " ".join(title[1].split())
    else:
        lines = (" ".join(line.split()) for line in _TAG.sub("\n", shown).splitlines())
        what = next((line for line in lines if line), "")
    if len(what) > _SHOWN:
        what = what[:_SHOWN] + "…"
    return f'an HTML page "{what}" ({length})' if what else f"an HTML page ({length})"


def describe(error: BaseException) -> str:
    """The error's message, with an HTML page in its body summarised (see `html_summary`)."""
    message = str(error)
    body = getattr(error, "body", None)
    if isinstance(body, str) and body and body in message:
        summary = html_summary(body)
        if summary is not None:
            return message.replace(body, summary, 1)
    return message


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def recording_problem(path: str) -> str | None:
    """Why `path` cannot be replayed, in one line; None when it is a regular file.

    A recording is read more than once (its head to tell its kind, then the
    whole), so it must be a regular file.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"no such file: {path!r}"
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{path!r} is {kind}, not a recording (a file that 'rxstream ... --log FILE' wrote)"
