"""Typed and general paths agree on every recording, cut or damaged, and on every wrong type.

The openai-chat, openai-responses, anthropic and cohere typed modules against
the standard-library path (`_equivalence`); each dialect's own events are
tested in its `test_<dialect>.py`. (Gemini, Ollama and Bedrock have theirs in
`_gemini_ollama_bedrock`.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.typed import (
    assert_same,
    assert_same_decoding,
    cut,
    damaged,
    mutation_streams,
    pipelines,
    recordings,
)

pytest.importorskip("msgspec")

DIALECTS = ("openai-chat", "openai-responses", "anthropic", "cohere")
#: Fewer wrong-type cases come out of the smaller Cohere recordings.
MUTATIONS = {"cohere": 50}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_wrong_type_anywhere_gives_the_same_error_both_ways(dialect: str) -> None:
    count = 0
    for k, (_, stream) in enumerate(mutation_streams(dialect)):
        assert_same_decoding(dialect, stream, at_once=bool(k % 2))
        count += 1
    assert count > MUTATIONS.get(dialect, 100)


CASES = [
    pytest.param(dialect, path, name, id=f"{dialect}:{path.parent.name}/{path.name}:{name}")
    for dialect in DIALECTS
    for path in recordings(dialect)
    for name in pipelines(dialect)
]


@pytest.mark.parametrize(("dialect", "path", "name"), CASES)
def test_whole_recordings_agree(dialect: str, path: Path, name: str) -> None:
    assert_same([path.read_bytes()], pipelines(dialect)[name])


@pytest.mark.parametrize(("dialect", "path", "name"), CASES)
@settings(max_examples=8, deadline=None)
@given(
    points=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
    damage=st.sampled_from(["none", "truncate", "flip"]),
    where=st.integers(min_value=0, max_value=1 << 20),
    bit=st.integers(min_value=0, max_value=7),
)
def test_cut_and_damaged_recordings_agree(
    dialect: str, path: Path, name: str, points: list[int], damage: str, where: int, bit: int
) -> None:
    body = damaged(path.read_bytes(), damage, where, bit)
    assert_same(cut(body, points), pipelines(dialect)[name])
