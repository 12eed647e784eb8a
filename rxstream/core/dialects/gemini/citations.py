"""The `"gemini"` dialect: grounding and citation metadata to `Citation` deltas.

Offsets arrive in UTF-8 bytes and leave in characters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....models import (
    Citation,
    Delta,
    JSONObject,
    Metadata,
)
from .._base import (
    ShapeError,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
)

if TYPE_CHECKING:  # the decoder module imports this one
    from .decode import _Candidate

#: The bytes of UTF-8 that start no character (continuation bytes), and all the others.
_NOT_CONTINUATION = bytes(b for b in range(256) if not 0x80 <= b < 0xC0)


class _Offsets:
    """UTF-8 byte offsets into a text, as character offsets (each byte read once per call)."""

    __slots__ = ("_encoded", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._encoded = b"" if text.isascii() else text.encode("utf-8")

    def convert(self, offsets: set[int]) -> dict[int, int]:
        if not self._encoded:
            size = len(self._text)
            return {b: b for b in offsets if 0 <= b <= size}
        encoded, out = self._encoded, {}
        at = chars = 0
        for b in sorted(offsets):
            if not 0 <= b <= len(encoded):
                continue
            # Every byte but a continuation byte starts a character.
            continuation = len(encoded[at:b].translate(None, _NOT_CONTINUATION))
            chars += b - at - continuation
            at = b
            out[b] = chars
        return out


def _span(
    obj: JSONObject, where: str, start_key: str, end_key: str
) -> tuple[int | None, int | None]:
    start = opt_int(obj, start_key, where)
    end = opt_int(obj, end_key, where)
    if end is not None and start is None:
        start = 0  # proto3 JSON leaves a zero start out
    return start, end


def _source(chunk: JSONObject, where: str) -> tuple[str | None, str | None, str | None]:
    """A grounding chunk's url, title and text, from whichever kind it is."""
    for kind in ("web", "retrievedContext", "maps", "image"):
        inner = opt_object(chunk, kind, where)
        if inner is not None:
            at = f"{where}.{kind}"
            return (
                opt_str(inner, "uri", at),
                opt_str(inner, "title", at),
                opt_str(inner, "text", at),
            )
    return None, None, None


def _citations(state: _Candidate, choice: int, where: str) -> list[Delta]:
    """The candidate's grounding and citation sources, with character offsets."""
    supports: list[tuple[JSONObject, JSONObject, int | None, int | None, str | None, list[int]]]
    supports = []
    chunks: list[JSONObject] = []
    grounding = state.grounding
    if grounding is not None:
        at = f"{where}.groundingMetadata"
        for k, chunk in enumerate(opt_list(grounding, "groundingChunks", at) or []):
            if type(chunk) is not dict:
                raise ShapeError(f"{at}.groundingChunks[{k}]", "an object", chunk)
            chunks.append(chunk)
        for k, support in enumerate(opt_list(grounding, "groundingSupports", at) or []):
            sat = f"{at}.groundingSupports[{k}]"
            if type(support) is not dict:
                raise ShapeError(sat, "an object", support)
            segment = opt_object(support, "segment", sat) or {}
            start, end = _span(segment, f"{sat}.segment", "startIndex", "endIndex")
            indices = opt_list(support, "groundingChunkIndices", sat) or []
            for i, index in enumerate(indices):
                if type(index) is not int or not 0 <= index < len(chunks):
                    raise ShapeError(
                        f"{sat}.groundingChunkIndices[{i}]",
                        f"an index into the {len(chunks)} grounding chunks",
                        index,
                    )
            text = opt_str(segment, "text", f"{sat}.segment")
            supports.append((support, segment, start, end, text, indices))
    sources: list[tuple[JSONObject, int | None, int | None]] = []
    for k, source in enumerate(state.citations):
        start, end = _span(source, f"{where}.citationMetadata[{k}]", "startIndex", "endIndex")
        sources.append((source, start, end))
    wanted = {o for s in supports for o in s[2:4] if o is not None}
    wanted.update(o for s in sources for o in s[1:3] if o is not None)
    chars = _Offsets("".join(state.texts)).convert(wanted) if wanted else {}
    out: list[Delta] = []
    cited: set[int] = set()
    for support, _, start, end, text, indices in supports:
        a = None if start is None else chars.get(start)
        b = None if end is None else chars.get(end)
        if not indices:
            out.append(
                Citation("grounding", None, None, text, a, b, choice, {"groundingSupport": support})
            )
        for index in indices:
            cited.add(index)
            url, title, _ = _source(chunks[index], f"groundingChunks[{index}]")
            raw = {"groundingSupport": support, "groundingChunk": chunks[index]}
            out.append(Citation("grounding", url, title, text, a, b, choice, raw))
    for index, chunk in enumerate(chunks):
        if index not in cited:
            url, title, text = _source(chunk, f"groundingChunks[{index}]")
            raw = {"groundingChunk": chunk}
            out.append(Citation("grounding", url, title, text, None, None, choice, raw))
    for source, start, end in sources:
        out.append(
            Citation(
                "citation",
                opt_str(source, "uri", "citationMetadata"),
                opt_str(source, "title", "citationMetadata"),
                None,
                None if start is None else chars.get(start),
                None if end is None else chars.get(end),
                choice,
                source,
            )
        )
    if grounding is not None:
        out.append(Metadata({"groundingMetadata": grounding}, choice))
    return out
