"""Marble diagrams for the docs: one ```marble block is both a test and a picture.

A block in a page of docs/ reads:

    ```marble
    pipe: rs.sse_frames(), rs.decode_chunks(), rs.accumulate_tool_calls()
    source: lines
    in:  -a-b-f-D
    out: -----C-|
    sub: ^------!
    a = tool(0, '{"q"', id="c1", name="f")
    b = tool(0, ":1}")
    f = finish("tool_calls")
    D = DONE
    C = rs.ToolCall(0, "c1", "f", '{"q":1}')
    ```

- `pipe`: the operators under test, Python expressions separated by commas;
- `source`: how `in` is made, one of `StreamMarbles`' sources: `lines` (each
  value becomes its SSE lines), `frames`, `chunks` or `deltas` (the default:
  the values as they are);
- `in` and `out`: marble diagrams in reactivex's syntax (one character is one
  tick, `(a,b)` a group at one tick, `|` completion, `#` an error), `out`
  counted from the subscription as `StreamMarbles.expected` counts it;
- `sub` (optional): the upstream subscription window (`^` subscribed,
  `!` disposed): where a picture shows that an operator lets go of its source;
- `then` (optional, repeatable): what the source gives its second, third, ...
  subscription (`in` is the first; the last `then` serves any later one):
  the picture of an operator that subscribes again, as a retry does;
- `X = expr`: the value of each symbol, a Python expression evaluated with
  `rs` (rxstream), `ops` (reactivex.operators), `timedelta`, `scheduler` (the
  test's virtual clock, for the timed operators) and the vocabulary of
  `rxstream.testing.marbles` (`text`, `reasoning`, `refusal`, `tool`,
  `finish`, `usage`, `error`, `DONE`, `KEEPALIVE`, `malformed`, and `ANY`, which
  equals anything: a value the legend names but the diagram does not spell out). A value that is an
  exception (or an exception class, in `out`) is an error; `DONE` completes a
  chunk- or delta-level diagram, as in `StreamMarbles`.

tests/test_docs_examples.py runs every block: it builds `in` with
`StreamMarbles`, pipes it through `pipe` on a `TestScheduler` and asserts that
what comes out is `out` (and that the upstream subscription is `sub`). This
module, loaded as an MkDocs hook (`hooks:` in mkdocs.yml), draws the same
block as an SVG file generated into the built site (never committed) and puts
the picture and a legend of the values where the block was.
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

BLOCK = re.compile(r"^```marble[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SOURCES = ("lines", "frames", "chunks", "deltas")
# reactivex's marble tokens (reactivex.observable.marbles.tokens): group, dashes, comma, element.
TOKENS = re.compile(r"(\(.*?\))|(-+)|(,)|(#|\||[^-,()#\|]+)")


@dataclass
class MarbleBlock:
    """One parsed ```marble block (the text of its values is kept for the legend)."""

    pipe: str
    input: str
    output: str
    source: str = "deltas"
    subscription: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    then: list[str] = field(default_factory=list)


def parse_block(body: str) -> MarbleBlock:
    """Read the body of a ```marble block; `ValueError` says what is wrong with it."""
    keys: dict[str, str] = {}
    values: dict[str, str] = {}
    then: list[str] = []
    for number, raw in enumerate(body.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        symbol = re.match(r"^([^\s=:]+)\s*=\s*(.+)$", line)
        key = re.match(r"^(pipe|source|in|out|sub|then):\s*(.*)$", line)
        if key and key.group(1) == "then":
            then.append(key.group(2).strip())
        elif key:
            keys[key.group(1)] = key.group(2).strip()
        elif symbol:
            values[symbol.group(1)] = symbol.group(2).strip()
        else:
            raise ValueError(f"marble block line {number}: cannot read {raw!r}")
    missing = [k for k in ("pipe", "in", "out") if k not in keys]
    if missing:
        raise ValueError(f"marble block without {', '.join(missing)}: {body!r}")
    source = keys.get("source", "deltas")
    if source not in SOURCES:
        raise ValueError(f"marble block source must be one of {SOURCES}, got {source!r}")
    return MarbleBlock(
        pipe=keys["pipe"],
        input=keys["in"],
        output=keys["out"],
        source=source,
        subscription=keys.get("sub"),
        values=values,
        then=then,
    )


def find_blocks(markdown: str) -> list[tuple[re.Match[str], MarbleBlock]]:
    """Every ```marble block of a page, with where it is."""
    return [(match, parse_block(match.group("body"))) for match in BLOCK.finditer(markdown)]


def namespace(scheduler: Any) -> dict[str, Any]:
    """What a block's expressions may use."""
    from unittest.mock import ANY

    import reactivex.operators as ops

    import rxstream as rs
    from rxstream.testing import marbles

    names: dict[str, Any] = {
        "rs": rs,
        "ops": ops,
        "timedelta": timedelta,
        "scheduler": scheduler,
        "ANY": ANY,
    }
    for name in (
        "text",
        "reasoning",
        "refusal",
        "tool",
        "finish",
        "usage",
        "error",
        "malformed",
        "DONE",
        "KEEPALIVE",
    ):
        names[name] = getattr(marbles, name)
    return names


def evaluate(block: MarbleBlock, scheduler: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The block's operators and its value map, on `scheduler`."""
    names = namespace(scheduler)
    pipe = eval(f"({block.pipe},)", names)  # the docs' own text
    values = {symbol: eval(expr, names) for symbol, expr in block.values.items()}
    return pipe, values


def one_per_subscription(sources: list[Any]) -> Any:
    """A source whose n-th subscription is `sources[n]` (the last one from there on):
    `in` and the `then` diagrams as one source that an operator subscribes again."""
    import reactivex

    count = 0

    def next_source(_: Any) -> Any:
        nonlocal count
        source = sources[min(count, len(sources) - 1)]
        count += 1
        return source

    return reactivex.defer(next_source)


# --------------------------------------------------------------------------- drawing


@dataclass
class _Event:
    tick: int
    kind: str  # "value", "complete", "error"
    symbol: str


def _events(marbles: str, values: dict[str, Any], *, done_completes: bool) -> list[_Event]:
    from rxstream.testing.marbles import DONE

    events: list[_Event] = []
    tick = 0
    for group, dashes, _comma, element in TOKENS.findall(marbles.replace(" ", "")):
        if group:
            for symbol in group[1:-1].split(","):
                if symbol:
                    events.append(_classify(tick, symbol, values, done_completes, DONE))
            tick += len(group)
        elif dashes:
            tick += len(dashes)
        elif element:
            events.append(_classify(tick, element, values, done_completes, DONE))
            tick += len(element)
    return events


def _classify(tick: int, symbol: str, values: dict[str, Any], done: bool, DONE: Any) -> _Event:
    if symbol == "|":
        return _Event(tick, "complete", symbol)
    if symbol == "#":
        return _Event(tick, "error", symbol)
    value = values.get(symbol)
    if value is DONE and done:
        return _Event(tick, "complete", symbol)
    if isinstance(value, BaseException) or (
        isinstance(value, type) and issubclass(value, BaseException)
    ):
        return _Event(tick, "error", symbol)
    return _Event(tick, "value", symbol)


def _length(marbles: str) -> int:
    ticks = 0
    for group, dashes, _comma, element in TOKENS.findall(marbles.replace(" ", "")):
        ticks += len(group or dashes or element)
    return ticks


_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759")
_TICK, _LEFT, _R = 24, 72, 11


def _color(symbol: str) -> str:
    digest = hashlib.sha1(symbol.lower().encode()).digest()
    return _PALETTE[digest[0] % len(_PALETTE)]


def _x(tick: int) -> float:
    return _LEFT + tick * _TICK + _TICK / 2


def _row(events: list[_Event], y: float, label: str, end: float) -> list[str]:
    out = [
        f'<text x="8" y="{y + 4}" class="label">{html.escape(label)}</text>',
        f'<line x1="{_LEFT}" y1="{y}" x2="{end}" y2="{y}" class="axis" marker-end="url(#arrow)"/>',
    ]
    by_tick: dict[int, list[_Event]] = {}
    for event in events:
        by_tick.setdefault(event.tick, []).append(event)
    for tick, group in sorted(by_tick.items()):
        x0 = _x(tick)
        if len(group) > 1:
            width = (len(group) - 1) * (2 * _R + 4)
            out.append(
                f'<rect x="{x0 - _R - 3}" y="{y - _R - 3}" width="{width + 2 * _R + 6}" '
                f'height="{2 * _R + 6}" rx="{_R + 3}" class="group"/>'
            )
        for i, event in enumerate(group):
            x = x0 + i * (2 * _R + 4)
            out += _mark(event, x, y)
    return out


def _mark(event: _Event, x: float, y: float) -> list[str]:
    if event.kind == "complete":
        return [f'<line x1="{x}" y1="{y - 12}" x2="{x}" y2="{y + 12}" class="end"/>']
    if event.kind == "error":
        d = 9
        shapes = [
            f'<line x1="{x - d}" y1="{y - d}" x2="{x + d}" y2="{y + d}" class="error"/>',
            f'<line x1="{x - d}" y1="{y + d}" x2="{x + d}" y2="{y - d}" class="error"/>',
        ]
        if event.symbol != "#":
            shapes.append(
                f'<text x="{x}" y="{y + 26}" class="errlabel">{html.escape(event.symbol)}</text>'
            )
        return shapes
    rx = max(_R, 4 + 4 * len(event.symbol))
    return [
        f'<ellipse cx="{x}" cy="{y}" rx="{rx}" ry="{_R}" fill="{_color(event.symbol)}" '
        'class="marble"/>',
        f'<text x="{x}" y="{y + 4}" class="symbol">{html.escape(event.symbol)}</text>',
    ]


def render_svg(block: MarbleBlock, values: dict[str, Any]) -> str:
    """The block as an SVG picture: the input, the operators, the output over time."""
    early_done = block.source in ("chunks", "deltas")
    inputs = [_events(d, values, done_completes=early_done) for d in (block.input, *block.then)]
    outputs = _events(block.output, values, done_completes=True)
    ticks = max(*map(_length, (block.input, *block.then, block.output)), 8) + 2
    pipe_text = block.pipe
    end = _LEFT + ticks * _TICK
    width = max(end + 16, _LEFT + 7.6 * len(pipe_text) + 40)
    top = 34 if block.subscription else 16
    rows = 40 * len(block.then)  # one more input row for each later subscription
    y_in, box, y_out = top + 14, top + 42 + rows, top + 104 + rows
    height = y_out + 34
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" role="img" '
        f'aria-label="{html.escape(_summary(block), quote=True)}">',
        f"<title>{html.escape(_summary(block))}</title>",
        "<style>"
        "text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;"
        "fill:#222}"
        ".label{font-size:11px;fill:#555}"
        ".axis{stroke:#666;stroke-width:1.5}"
        ".marble{stroke:#333;stroke-width:1}"
        ".symbol{text-anchor:middle;fill:#fff;font-weight:bold}"
        ".end{stroke:#333;stroke-width:2.5}"
        ".error{stroke:#c0392b;stroke-width:3}"
        ".errlabel{text-anchor:middle;fill:#c0392b;font-size:10px}"
        ".group{fill:none;stroke:#999;stroke-dasharray:3 2}"
        ".box{fill:#f4f6fb;stroke:#8894b0}"
        ".sub{stroke:#8894b0;stroke-width:2}"
        "</style>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker>'
        "</defs>",
        f'<rect x="0" y="0" width="{width:.0f}" height="{height}" fill="#fff"/>',
    ]
    if block.subscription:
        parts += _subscription(block.subscription, top - 12)
    for n, events in enumerate(inputs):
        parts += _row(events, y_in + 40 * n, "input" if n == 0 else f"then {n + 1}", end)
    parts.append(
        f'<rect x="{_LEFT}" y="{box}" width="{width - _LEFT - 12:.0f}" height="30" rx="4" '
        'class="box"/>'
    )
    parts.append(f'<text x="{_LEFT + 10}" y="{box + 19}">{html.escape(pipe_text)}</text>')
    parts += _row(outputs, y_out, "output", end)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _subscription(window: str, y: float) -> list[str]:
    start = window.find("^")
    stop = window.find("!")
    x1 = _x(max(start, 0))
    parts = [f'<text x="8" y="{y + 4}" class="label">upstream</text>']
    if stop >= 0:
        x2 = _x(stop)
        parts += [
            f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" class="sub"/>',
            f'<line x1="{x1}" y1="{y - 5}" x2="{x1}" y2="{y + 5}" class="sub"/>',
            f'<line x1="{x2}" y1="{y - 5}" x2="{x2}" y2="{y + 5}" class="sub"/>',
            f'<text x="{x2 + 6}" y="{y + 4}" class="label">disposed</text>',
        ]
    else:
        parts.append(f'<line x1="{x1}" y1="{y}" x2="{x1 + 40}" y2="{y}" class="sub"/>')
    return parts


def _summary(block: MarbleBlock) -> str:
    later = "".join(f", then {diagram}" for diagram in block.then)
    return f"marble diagram of {block.pipe}: input {block.input}{later}, output {block.output}"


# --------------------------------------------------------------------------- the MkDocs hook

# src_uri of a page -> the site paths of its pictures, in block order.
_PICTURES: dict[str, list[str]] = {}


def picture_path(src_uri: str, index: int) -> str:
    stem = src_uri.removesuffix(".md").replace("/", "-")
    return f"marbles/{stem}-{index + 1}.svg"


def on_files(files: Any, config: Any) -> Any:
    """Render every marble block of every page into a generated SVG file."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File
    from reactivex.testing import TestScheduler

    _PICTURES.clear()
    for file in list(files):
        if not file.src_uri.endswith(".md"):
            continue
        text = file.content_string
        if "```marble" not in text:
            continue
        paths = []
        try:
            blocks = find_blocks(text)
            for index, (_, block) in enumerate(blocks):
                _, values = evaluate(block, TestScheduler())
                path = picture_path(file.src_uri, index)
                files.append(File.generated(config, path, content=render_svg(block, values)))
                paths.append(path)
        except Exception as exc:
            raise PluginError(f"{file.src_uri}: a marble block cannot be drawn: {exc}") from exc
        _PICTURES[file.src_uri] = paths
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put each block's picture and the legend of its values where the block was."""
    paths = iter(_PICTURES.get(page.file.src_uri, []))
    here = posixpath.dirname(page.file.src_uri)

    def replace(match: re.Match[str]) -> str:
        block = parse_block(match.group("body"))
        link = posixpath.relpath(next(paths), here or ".")
        legend = "\n".join(
            f"- {_code(symbol)} = {_code(expr)}" for symbol, expr in block.values.items()
        )
        alt = f"Marble diagram: {block.input} through {block.pipe} gives {block.output}"
        return f"![{_alt(alt)}]({link}){{ .marble }}\n\n{legend}\n"

    return BLOCK.sub(replace, markdown)


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _alt(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")
