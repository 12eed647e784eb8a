"""Typed objects as they stream: the incremental JSON reader against re-parsing and json.loads.

Three measures (issue 32), each the best of `--repeat` runs, CPU time of this thread:

1. A 1 MB object streamed in 16-character fragments through `rs.partial_object`'s machine
   (`PartialObjectAccumulator`: the reader, and its paced snapshots), against one
   `json.loads` of the whole text. Target: at most 3x. Also shown: the reader alone, and the
   machine at 256-character fragments.
2. A 100 KB object in 16-character fragments: the same machine against re-parsing the buffer
   per fragment with `pydantic_core.from_json(buf, allow_partial=True)`, and against
   instructor's partial streaming when instructor can be imported (else the row says it
   was skipped, and why). instructor is driven offline, as its `create_partial` drives it
   per chunk: `create_partial` asks for `instructor.Partial[Model]`, whose
   `from_streaming_response` hands the answer's JSON text chunks to
   `Partial[Model].model_from_chunks`; that adds each chunk to the buffer and calls
   `process_potential_object` on the whole buffer (jiter's `from_json(...,
   partial_mode="trailing-strings")`, a completeness walk of the parsed value, a partial
   model), yielding an object per chunk. Here the chunks are the same 16-character
   fragments. Install instructor in an environment of its own, never as a dependency of
   rxstream (`python3 -m venv venv-typed && venv-typed/bin/pip install -e . instructor
   pydantic`, then run this file with `venv-typed/bin/python`). Target: at least 100x
   cheaper.
3. `rs.elements("/items", item=Item)`'s machine over a 10,000-element array (16- and
   256-character fragments), against `json.loads` of the whole plus validating each element
   once with the same pydantic `TypeAdapter`. Target: at most 2x. Also with a msgspec
   `Struct` as the item, against `json.loads` plus `msgspec.convert` of each element.

    python benchmarks/bench_partial_json.py            # the figures above
    python benchmarks/bench_partial_json.py --quick    # smaller documents

Prints a table of the ratios; not a timed test (nothing fails on a slow machine).

Measured for issue 32, second round (2 shared cores, load average 4-8 from other jobs; main's
code and this one run alternately, three rounds, in each of two windows; every ratio moved by
up to half between rounds, so ranges over the six are given; the ratios are to one
`json.loads` of the same text):

- `rs.partial_object`, 1 MB in 16-character fragments: before 51-82x, after 14.5-32x (the 32x
  at load 7; 14.5-21x in the other five); in 256-character fragments: before 16-28x, after
  9-16.5x. What changed: (1) the machine reads
  its text only when a snapshot can be due (once the last snapshot's size over 7 characters
  have arrived since it): 62,503 fragments become 5,575 reads, of 179 characters on average
  (the first 2,400 one fragment each, while the object is under 256 entries); (2) it reads
  them with `JSONStreamParser(events=False)`, which decodes each run of whole members or
  elements with one call of the C scanner (1.6-1.7x faster than the reader with events on
  256- and 1,024-character fragments; no gain on 16-character ones, 189 against 200 ms:
  the per-value events were not the cost there, the per-fragment dispatch is); (3) no failed
  scans where the closing character is absent (a failed C scan raises, 9 us each, the cost
  of reading some 400 characters).
- Where the 16-character time goes now (362 ms, `json.loads` 21 ms): reading the 5,575
  batches 192 ms (about 45 ms of it the first 42 KB, read fragment by fragment); the 5,375
  snapshots 41 ms (6.84 entries copied per character read: list copies of up to 7,000
  entries); the held fragments 26-29 ms (1.7-1.9x `json.loads` by themselves: a method call,
  a few attribute loads and an append per fragment; "a bare call each" is 0.25-0.7x). So the
  3x target is out of reach with this pacing: the snapshot copies (about 2x) and one call
  per fragment (about 1.8x) exceed it before any reading. Snapshots after every fragment,
  unpaced, would cost 60-73x `json.loads` at 100 KB already, and grow with the square.
- Against re-parsing per fragment with `pydantic_core.from_json(allow_partial=True)` at
  100 KB: before 23-36x, after 36-53x cheaper (target 100x): at 100 KB the object is small
  for a long time (its first 36 KB get a snapshot after every change, so are read fragment by
  fragment); the gap grows with the size, since the re-parse is quadratic.
- `rs.elements`, 10,000 elements (1.55 MB): in 16-character fragments, before 6.9-11.8x,
  after 4.7-6.5x of `json.loads` plus validating each element once (second window, with
  every change; 5.7-6.9x in the first, before the last one). A skimmed element's fragments
  (the first round, skimming, had taken it from 17-24x to 9.0-9.5x) are held until as many
  closing characters as it has open levels have arrived (most are then one append); an
  element begun in an earlier fragment is read whole by the scanner from its start once a
  closing character of its own kind arrives (tried once per element; 10% faster in 16- and
  20% in 256-character fragments, measured alone); a skimmed element is decoded by the
  scanner directly. In 256-character fragments the full runs show no clear change (before
  2.7-4.4x, after 2.3-4.9x): there the skimming reader alone is 1.3-3.0x, and the rest is a
  dozen Python calls per element (its path, event, pointer check, validation call).
  Not done, measured: validating the element's text with
  `TypeAdapter.validate_json` (3.9 us an element) instead of scanning and `validate_python`
  (6.0 us) would save about 0.2x, but pydantic's JSON reader is not exact against
  `json.loads` (lone surrogates), so it needs a fallback to the scanner on any refusal.

Third round, `rs.elements` (2 shared cores, load average 9.4-9.9 throughout; main's code
and this one run alternately, four rounds, each side in a fresh process, the best of five
runs a row):

- pydantic `Item`, 16-character fragments: main 6.0-6.6x, now 3.3-3.8x; 256-character
  fragments: main 3.1-3.5x, now 2.7-3.0x. msgspec `Struct` (against `json.loads` plus
  `msgspec.convert` of each, about half pydantic's base): 16: main 10.7-11.7x, now 6.1-7.3x;
  256: main 5.4-5.7x, now 4.8-5.7x. What changed: inside an element, the splitter holds a
  delta that cannot close it itself (one `in` test and one append while one closer of the
  element's own kind is what can close it: 85,000 of the 97,000 deltas at 16 characters,
  0.3 us each), and the reader waits for a closer of the element's own kind too (an inner
  `]` no longer starts a read: 11,800 reads instead of 21,800); a skimmed element's path is
  its array's plus its index, and the splitter knows the array's path (no pointer walk per
  element).
- Where the 16-character time goes now (about 150 ms, the base 40 ms): holding the deltas
  about 27 ms; the 11,800 reads about 10 us each (the run, the skimming step, the scan of the
  whole element, its event, the splitter's look at it, the validation call: a dozen Python
  calls an element), of which validating is 2.9 us with the scan. 2x needs the per-element
  Python work under about 3 us: it would take reading runs of whole elements in one call.
- The Rx chain (two more alternating rounds, load 9): `rs.elements` as an operator fed one
  delta per `on_next` (`reactivex.from_iterable`), 16-character fragments: main 8.0-8.9x,
  now 6.3-7.3x; fed through the chain of machines 64 deltas a call (as a source that hands
  out a read's worth of lines at once feeds it): main 5.4-6.0x, now 3.4-3.7x, the machine's
  own figure. So per-delta `on_next` costs about as much again as the machine (the run, the
  chunk-or-delta decoder in front, the splitter's way in: some 1.5 us a delta), and a batched
  source pays little of it. In 256-character fragments all three are within 0.5x.
- Tried and not kept, measured: validating each element's text in one pass
  (`validate_json`; msgspec's typed `json.decode`), made exact (only for plain field types,
  where JSON and Python validation agree; text with `NaN`/`Infinity` sent the exact way
  first; whatever it refuses, such as a lone surrogate or an integer past the digit limit,
  decoded by the scanner and validated as a value). In the same process against the exact
  way, three rounds: pydantic 16-character 160-175 ms against 142-152, 256-character 134-140
  against 119-149; msgspec equal. `validate_json` costs 1.5 us an element against 2.9 us for
  the scan and `validate_python`, but the element must first be delimited (a pattern), and
  the calls around it cost the rest.
- instructor's partial streaming at 100 KB (instructor 1.17, in an environment of its own):
  `Partial[Catalog]` over the 6,255 fragments takes about 18 s, `rs.partial_object(Catalog)`'s
  machine about 52 ms: 347x and 350x in two runs (load 8-9); target >= 100x met. Its cost
  grows with the square of the size: per chunk it parses the whole buffer with jiter three
  times (partially, strictly for the completeness check, partially again) and walks the
  parsed value in Python.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pydantic
import pydantic_core

from rxstream.core import ElementSplitter, JSONStreamParser, PartialObjectAccumulator
from rxstream.models import TextDelta


class Item(pydantic.BaseModel):
    id: int
    name: str
    score: float
    tags: list[str]
    ok: bool
    note: str | None = None


class Catalog(pydantic.BaseModel):
    title: str
    items: list[Item]


def catalog(size: int, seed: int = 7) -> str:
    """A JSON object of about `size` characters: a title and a list of items."""
    rng = random.Random(seed)
    items = []
    length = 0
    while length < size:
        item = {
            "id": len(items),
            "name": f"item {len(items)} " + "x" * rng.randint(5, 40),
            "score": rng.random() * 100,
            "tags": rng.sample(["red", "green", "blue", "small", "large"], 2),
            "ok": rng.random() < 0.5,
            "note": None if rng.random() < 0.5 else 'a note with "quotes" and é',
        }
        items.append(item)
        length += len(json.dumps(item)) + 2
    return json.dumps({"title": "catalog", "items": items})


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def best(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        run()
        times.append(time.thread_time() - start)
    return min(times)


def partial_machine(fragments: list[str], output: object = None) -> Callable[[], Any]:
    deltas = [TextDelta(p) for p in fragments]

    def run() -> Any:
        machine = PartialObjectAccumulator(output)
        for delta in deltas:
            machine.feed(delta)
        return machine.close()

    return run


def reader_alone(fragments: list[str]) -> Callable[[], Any]:
    def run() -> Any:
        reader = JSONStreamParser()
        for fragment in fragments:
            reader.feed(fragment)
        return reader.close()

    return run


def reader_without_events(fragments: list[str]) -> Callable[[], Any]:
    """The reader as `rs.partial_object` runs it when every fragment is read (no holding)."""

    def run() -> Any:
        reader = JSONStreamParser(events=False)
        for fragment in fragments:
            reader.feed(fragment)
        return reader.close()

    return run


def snapshot_every_fragment(fragments: list[str]) -> Callable[[], Any]:
    """A snapshot after every fragment, unpaced: what pacing saves (quadratic in the size)."""

    def run() -> Any:
        reader = JSONStreamParser(events=False)
        for fragment in fragments:
            reader.feed(fragment)
            reader.snapshot()
        return reader.close()

    return run


def snapshots_given(fragments: list[str]) -> tuple[int, int]:
    """How many snapshots `rs.partial_object` gives, and the entries they copy in all."""
    machine = PartialObjectAccumulator()
    count = copied = 0
    for fragment in fragments:
        if machine.feed(TextDelta(fragment)):
            count += 1
            copied += machine._reader.snapshot_size()
    machine.close()
    return count, copied


def reader_skimming(fragments: list[str]) -> Callable[[], Any]:
    """The reader as `rs.elements("/items")` runs it: the array skimmed, its elements dropped."""

    def run() -> Any:
        reader = JSONStreamParser(
            keep=lambda path: len(path) != 2, skim=lambda path: path == ("items",)
        )
        for fragment in fragments:
            reader.feed(fragment)
        return reader.close()

    return run


def bare_calls(fragments: list[str]) -> Callable[[], Any]:
    """One Python method call per fragment that looks at it: the floor of any pure-Python reader."""

    class Nothing:
        def feed(self, text: str) -> list[str]:
            return [text] if text[-1] == "}" else []

    def run() -> Any:
        nothing = Nothing()
        for fragment in fragments:
            nothing.feed(fragment)

    return run


def reparse_per_fragment(fragments: list[str]) -> Callable[[], Any]:
    def run() -> Any:
        buffer = ""
        value = None
        for fragment in fragments:
            buffer += fragment
            value = pydantic_core.from_json(buffer, allow_partial=True)
        return value

    return run


def instructor_partial(fragments: list[str]) -> Callable[[], Any] | str:
    """instructor's partial streaming over `fragments` (see the module docstring); or why not."""
    try:
        import instructor
    except ImportError as exc:
        return f"skipped: instructor cannot be imported here ({exc})"
    partial = instructor.Partial[Catalog]

    def chunks() -> Iterator[str]:
        yield from fragments

    def run() -> Any:
        last = None
        for snapshot in partial.model_from_chunks(chunks()):  # type: ignore[attr-defined]
            last = snapshot
        return last

    return run


def elements_machine(fragments: list[str], item: object = Item) -> Callable[[], Any]:
    deltas = [TextDelta(p) for p in fragments]

    def run() -> Any:
        splitter = ElementSplitter("/items", item=item)
        out = []
        for delta in deltas:
            out += splitter.feed(delta)
        return out + splitter.close()

    return run


def loads_and_validate(text: str) -> Callable[[], Any]:
    adapter = pydantic.TypeAdapter(Item)

    def run() -> Any:
        return [adapter.validate_python(item) for item in json.loads(text)["items"]]

    return run


def item_struct() -> Any:
    """`Item` as a msgspec Struct (msgspec is the `fast` extra); or why not."""
    try:
        import msgspec
    except ImportError as exc:
        return f"skipped: msgspec cannot be imported here ({exc})"

    class ItemStruct(msgspec.Struct):
        id: int
        name: str
        score: float
        tags: list[str]
        ok: bool
        note: str | None = None

    return ItemStruct


def loads_and_convert(text: str, struct: Any) -> Callable[[], Any]:
    import msgspec

    def run() -> Any:
        return [msgspec.convert(item, struct) for item in json.loads(text)["items"]]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller documents")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    big, mid = (200_000, 30_000) if args.quick else (1_000_000, 100_000)
    rows: list[tuple[str, float, str]] = []

    text = catalog(big)
    whole = best(lambda: json.loads(text), args.repeat * 3)
    for size in (16, 256):
        cost = best(partial_machine(pieces(text, size)), args.repeat)
        rows.append(
            (
                f"{len(text):,} chars, {size}-char fragments: partial_object / json.loads",
                cost / whole,
                "target <= 3",
            )
        )
    cost = best(reader_alone(pieces(text, 16)), args.repeat)
    rows.append(
        (f"{len(text):,} chars, 16-char fragments: the reader alone / json.loads", cost / whole, "")
    )
    cost = best(reader_without_events(pieces(text, 16)), args.repeat)
    rows.append(
        (
            f"{len(text):,} chars, 16-char fragments: the reader without events, every fragment",
            cost / whole,
            "",
        )
    )
    count, copied = snapshots_given(pieces(text, 16))
    rows.append(
        (f"  snapshots given: {count:,}; entries copied per character", copied / len(text), "")
    )
    cost = best(bare_calls(pieces(text, 16)), args.repeat)
    rows.append(
        (f"{len(text):,} chars, 16-char fragments: a bare call each / json.loads", cost / whole, "")
    )

    text = catalog(mid)
    fragments = pieces(text, 16)
    cost = best(snapshot_every_fragment(fragments), 1)
    rows.append(
        (
            f"{len(text):,} chars, 16-char fragments: unpaced, a snapshot after each / json.loads",
            cost / best(lambda: json.loads(text), args.repeat * 3),
            "",
        )
    )
    ours = best(partial_machine(fragments, Catalog), args.repeat)
    reparse = best(reparse_per_fragment(fragments), 1)
    rows.append(
        (
            f"{len(text):,} chars, 16-char fragments: from_json(allow_partial) per fragment / ours",
            reparse / ours,
            "target >= 100",
        )
    )
    instructor_run = instructor_partial(fragments)
    if isinstance(instructor_run, str):
        rows.append(("instructor's partial streaming", float("nan"), instructor_run))
    else:
        theirs = best(instructor_run, 1)
        rows.append(
            (
                f"{len(text):,} chars, 16-char fragments: instructor Partial / ours",
                theirs / ours,
                "target >= 100",
            )
        )

    text = json.dumps(json.loads(catalog(big * 2))["items"][:10_000])
    text = '{"items": ' + text + "}"
    base = best(loads_and_validate(text), args.repeat)
    for size in (16, 256):
        cost = best(elements_machine(pieces(text, size)), args.repeat)
        rows.append(
            (
                f"10,000 elements, {size}-char fragments: elements / (loads + validate)",
                cost / base,
                "target <= 2",
            )
        )
        cost = best(reader_skimming(pieces(text, size)), args.repeat)
        rows.append(
            (
                f"10,000 elements, {size}-char fragments: the skimming reader alone / same",
                cost / base,
                "",
            )
        )
    struct = item_struct()
    if isinstance(struct, str):
        rows.append(("elements with a msgspec Struct", float("nan"), struct))
        struct = None
    base = best(loads_and_convert(text, struct), args.repeat) if struct else 0.0
    for size in (16, 256) if struct else ():
        cost = best(elements_machine(pieces(text, size), struct), args.repeat)
        rows.append(
            (
                f"10,000 elements, {size}-char fragments, msgspec: elements / (loads + convert)",
                cost / base,
                "target <= 2",
            )
        )

    width = max(len(r[0]) for r in rows)
    for what, ratio, target in rows:
        print(f"{what:<{width}}  {ratio:8.2f}x  {target}")


if __name__ == "__main__":
    main()
