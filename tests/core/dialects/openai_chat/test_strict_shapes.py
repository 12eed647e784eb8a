"""No field of the wrong type is ever skipped in silence: a mutation test over real chunks.

Every chat chunk recorded in tests/data is a source of mutants: one value at
one JSON path is replaced by a value of another JSON type (null, a boolean,
an integer, a float, a string, an array, an object). Each mutant then goes
through the decoders and must do one of two things:

- the path is one the decoders read (`ALLOWED` lists them, with the types
  each may have), and the new type is not allowed there: a
  `MalformedChunkError` whose reason starts with that path;
- otherwise (an allowed type, or a field nobody reads): no error; and when
  nobody reads the field, exactly the deltas of the unmutated chunk.

A decoder that skipped a wrong type in silence would give the deltas of the
chunk without that field, and fail the first rule; one that read a field it
does not declare would fail the second. Thousands of seeded mutations run,
and every path of `ALLOWED` that the recordings contain must have been hit.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rxstream.core.dialects.openai_chat.chunks import ChunkDecoder
from rxstream.core.dialects.openai_chat.deltas import DeltaDecoder
from rxstream.core.pipeline import fuse_pair
from rxstream.errors import MalformedChunkError
from rxstream.models import ChatChunk, Delta, SSEFrame
from tests.support.json_paths import json_path  # noqa: F401  (every test runs on both JSON paths)

DATA = Path(__file__).parents[3] / "data"

Path_ = tuple[str | int, ...]

NULL, BOOL, INT, FLOAT, STR, ARRAY, OBJECT = (
    "null",
    "boolean",
    "integer",
    "float",
    "string",
    "array",
    "object",
)
#: A value of each JSON type, to put in place of another.
SAMPLES: dict[str, Any] = {
    NULL: None,
    BOOL: True,
    INT: 7,
    FLOAT: 2.5,
    STR: "s",
    # Empty containers: an allowed container type must not bring a wrong child along.
    ARRAY: [],
    OBJECT: {},
}

_TEXT = {STR, NULL}
_COUNT = {INT, NULL}
_COUNTERS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "reasoning_tokens",
    "prompt_cache_hit_tokens",
)


def _usage(prefix: str) -> dict[str, set[str]]:
    table = {prefix: {OBJECT, NULL}}
    table.update({f"{prefix}.{name}": _COUNT for name in _COUNTERS})
    table[f"{prefix}.completion_tokens_details"] = {OBJECT, NULL}
    table[f"{prefix}.completion_tokens_details.reasoning_tokens"] = _COUNT
    table[f"{prefix}.prompt_tokens_details"] = {OBJECT, NULL}
    table[f"{prefix}.prompt_tokens_details.cached_tokens"] = _COUNT
    table[f"{prefix}.prompt_tokens_details.cache_write_tokens"] = _COUNT
    return table


def _fields(prefix: str, names: tuple[str, ...]) -> dict[str, set[str]]:
    return {f"{prefix}.{name}": _COUNT if name.endswith("_index") else _TEXT for name in names}


_CITED = ("url", "title", "start_index", "end_index")
_NOTE = "choices[].delta.annotations[]"
_PARTS = "choices[].delta.content[]"
_CALL = "choices[].delta.tool_calls[]"
_NUMBER = {INT, FLOAT, NULL}


def _logprobs(prefix: str, top: bool = True) -> dict[str, set[str]]:
    entry = f"{prefix}[]"
    table = {prefix: {ARRAY, NULL}, entry: {OBJECT}, f"{entry}.token": _TEXT}
    table[f"{entry}.logprob"] = _NUMBER
    table[f"{entry}.bytes"] = {ARRAY, NULL}
    table[f"{entry}.bytes[]"] = {INT}
    if top:
        table.update(_logprobs(f"{entry}.top_logprobs", top=False))
    return table


#: Every path the decoders read (array indexes written `[]`), and the types it may have.
ALLOWED: dict[str, set[str]] = {
    "id": _TEXT,
    "model": _TEXT,
    "choices": {ARRAY, NULL},
    "choices[]": {OBJECT},
    "choices[].index": _COUNT,
    "choices[].delta": {OBJECT, NULL},
    "choices[].finish_reason": _TEXT,
    "choices[].text": _TEXT,
    "choices[].logprobs": {OBJECT, NULL},
    **_logprobs("choices[].logprobs.content"),
    **_logprobs("choices[].logprobs.refusal"),
    "choices[].delta.role": _TEXT,
    "choices[].delta.refusal": _TEXT,
    "choices[].delta.reasoning_content": _TEXT,
    "choices[].delta.reasoning": _TEXT,
    "choices[].delta.content": {STR, ARRAY, NULL},
    _PARTS: {STR, OBJECT},
    f"{_PARTS}.type": {STR},
    f"{_PARTS}.text": _TEXT,
    f"{_PARTS}.thinking": {STR, ARRAY, NULL},
    f"{_PARTS}.thinking[]": {STR, OBJECT},
    f"{_PARTS}.thinking[].type": {STR},
    f"{_PARTS}.thinking[].text": _TEXT,
    "choices[].delta.reasoning_details": {ARRAY, NULL},
    "choices[].delta.reasoning_details[]": {OBJECT},
    "choices[].delta.reasoning_details[].type": _TEXT,
    "choices[].delta.reasoning_details[].text": _TEXT,
    "choices[].delta.reasoning_details[].summary": _TEXT,
    "choices[].delta.tool_calls": {ARRAY, NULL},
    _CALL: {OBJECT},
    f"{_CALL}.index": _COUNT,
    f"{_CALL}.id": _TEXT,
    f"{_CALL}.type": _TEXT,
    f"{_CALL}.function": {OBJECT, NULL},
    f"{_CALL}.function.name": _TEXT,
    f"{_CALL}.function.arguments": {STR, OBJECT, NULL},
    "choices[].delta.function_call": {OBJECT, NULL},
    "choices[].delta.function_call.name": _TEXT,
    "choices[].delta.function_call.arguments": {STR, OBJECT, NULL},
    "choices[].delta.annotations": {ARRAY, NULL},
    _NOTE: {OBJECT},
    f"{_NOTE}.type": _TEXT,
    f"{_NOTE}.url_citation": {OBJECT, NULL},
    **_fields(f"{_NOTE}.url_citation", _CITED),
    **_fields(_NOTE, _CITED),
    "citations": {ARRAY, NULL},
    "citations[]": {STR, OBJECT},
    **_fields("citations[]", ("url", "title")),
    "search_results": {ARRAY, NULL},
    "search_results[]": {STR, OBJECT},
    **_fields("search_results[]", ("url", "title")),
    **_usage("usage"),
    "x_groq": {OBJECT, NULL},
    **_usage("x_groq.usage"),
}


def kind(value: Any) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STR
    return ARRAY if isinstance(value, list) else OBJECT


def written(path: Path_) -> str:
    """A path as the error messages write it: `choices[0].delta.content`."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def pattern(path: Path_) -> str:
    return ".".join("[]" if isinstance(step, int) else step for step in path).replace(".[]", "[]")


def get(value: Any, path: Path_) -> Any:
    for step in path:
        value = value[step]
    return value


def is_read(chunk: dict[str, Any], path: Path_) -> bool:
    """Whether the decoders read the value at `path` in `chunk` (False for unknown paths)."""
    name = pattern(path)
    if name not in ALLOWED:
        return False
    for depth in range(1, len(path)):
        if not is_read(chunk, path[:depth]):
            return False
        parent = get(chunk, path[:depth])
        if pattern(path[:depth]) in ALLOWED and kind(parent) not in ALLOWED[pattern(path[:depth])]:
            return False  # a broken container: what is inside it is never reached
    if name == "choices[].text":
        return get(chunk, path[:2]).get("delta") is None
    if name.startswith("x_groq"):
        return chunk.get("usage") is None
    if name.endswith(("content[].text", "thinking[].text")):
        return bool(get(chunk, path[:-1]).get("type") == "text")
    if name.endswith("content[].thinking"):
        content_part: dict[str, Any] = get(chunk, path[:-1])
        return content_part.get("type") == "thinking"
    if re.search(r"content\[\](\.thinking\[\])?\.type$", name):
        return True
    if "thinking[]" in name:
        # The items of a thinking array are read when its part is a thinking part.
        part = get(chunk, path[: path.index("thinking")])
        return isinstance(part, dict) and part.get("type") == "thinking"
    return True


def paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every path inside a value, containers and leaves alike (not the root)."""
    children: Any = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for step, child in children:
        yield (*prefix, step)
        yield from paths(child, (*prefix, step))


def mutated(chunk: dict[str, Any], path: Path_, new: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(chunk))
    parent = get(copy, path[:-1])
    parent[path[-1]] = new
    return copy


def recorded_chunks() -> list[dict[str, Any]]:
    """Every chat chunk of the recordings in tests/data, in file order."""
    out = []
    for file in sorted(DATA.glob("*/*.sse")):
        for line in file.read_text(encoding="utf-8").splitlines():
            if not line.startswith("data:"):
                continue
            try:
                value = json.loads(line[5:])
            except ValueError:
                continue
            chat = isinstance(value, dict) and ("choices" in value or "usage" in value)
            chat = chat and "type" not in value  # (another dialect's event with a usage)
            if chat and "error" not in value:
                out.append(value)
    return out


CHUNKS = recorded_chunks()


def through_delta_decoder(chunk: dict[str, Any]) -> list[Delta]:
    return DeltaDecoder().feed(ChatChunk(chunk))


def through_chunk_decoder(chunk: dict[str, Any]) -> list[Delta]:
    # Fused with a DeltaDecoder, as the operator chain runs it: frames in, deltas out.
    decoder = ChunkDecoder()
    fuse_pair(decoder, DeltaDecoder())
    out: list[Delta] = decoder.feed(SSEFrame(json.dumps(chunk)))  # type: ignore[assignment]
    return out


def through_plain_chunk_decoder(chunk: dict[str, Any]) -> list[Delta]:
    # Alone, the chunk decoder checks each chunk as it passes it on.
    [decoded] = ChunkDecoder().feed(SSEFrame(json.dumps(chunk)))
    return DeltaDecoder().feed(decoded)


DECODERS = [through_delta_decoder, through_chunk_decoder, through_plain_chunk_decoder]


def outcome(decode: Any, chunk: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", decode(chunk)
    except MalformedChunkError as exc:
        return "error", exc.reason


def test_the_recordings_hold_enough_chunks() -> None:
    assert len(CHUNKS) > 1000
    for chunk in CHUNKS:
        assert outcome(through_delta_decoder, chunk)[0] == "ok", chunk


MUTATIONS = 4000


def _holders() -> tuple[dict[str, list[tuple[dict[str, Any], Path_]]], set[str]]:
    # Mutate the rarer shapes as often as the common ones: draw a path, then a chunk holding it.
    holders: dict[str, list[tuple[dict[str, Any], Path_]]] = {}
    present: set[str] = set()
    for chunk in CHUNKS:
        for path in paths(chunk):
            holders.setdefault(pattern(path), []).append((chunk, path))
            if pattern(path) in ALLOWED and is_read(chunk, path):
                present.add(pattern(path))
    return holders, present


HOLDERS, PRESENT = _holders()


@pytest.mark.parametrize("decode", DECODERS, ids=lambda f: f.__name__)
def test_no_wrong_type_is_skipped_in_silence(decode: Any) -> None:
    rng = random.Random(20_260_501)
    hit: set[str] = set()
    checked = 0
    holders, present = HOLDERS, PRESENT
    names = sorted(holders)
    while checked < MUTATIONS:
        chunk, path = rng.choice(holders[rng.choice(names)])
        old = kind(get(chunk, path))
        new_kind = rng.choice([k for k in SAMPLES if k != old])
        mutant = mutated(chunk, path, SAMPLES[new_kind])
        name = pattern(path)
        got = outcome(decode, mutant)
        where = f"{written(path)} {old} -> {new_kind} in {json.dumps(chunk)[:300]}"
        if is_read(mutant, path):
            hit.add(name)
            if new_kind in ALLOWED[name]:
                assert got[0] == "ok", f"refused an allowed type: {where}: {got[1]}"
            else:
                assert got[0] == "error", f"skipped in silence: {where}"
                assert got[1].startswith(f"{written(path)} is a JSON "), (where, got[1])
        else:
            assert got == outcome(decode, chunk), (
                f"a field nobody reads changed the result: {where}"
            )
        checked += 1
    assert present <= hit, f"never mutated: {sorted(present - hit)}"
