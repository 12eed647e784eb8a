"""`rxstream.core.tokens`, split by job: its names stay, and a name set on it reaches its reader."""

from __future__ import annotations

import importlib

import pytest

from rxstream.core import tokens as tokens_module

#: What `rxstream.core.tokens` offered as one module, by `from rxstream.core.tokens import X`.
PUBLIC = [
    "BUNDLED_ENCODINGS",
    "DEFAULT_ENCODING",
    "TAIL_LIMIT",
    "EncodingSpec",
    "TokenCounter",
    "resolve_encoding",
]


def test_the_public_names_stay_where_they_were() -> None:
    assert tokens_module.__all__ == PUBLIC
    assert tokens_module.BUNDLED_ENCODINGS == ("o200k_base", "cl100k_base")
    assert tokens_module.DEFAULT_ENCODING == "o200k_base"
    assert tokens_module.TokenCounter is importlib.import_module("rxstream.core").TokenCounter
    assert (
        tokens_module.TiktokenEncoding
        is importlib.import_module("rxstream._encodings").TiktokenEncoding
    )


# A name set on the package (a test tuning the counter, or hiding the shipped data), and
# the module that reads it.
HOMES = [
    pytest.param("_CACHE_SPLITS", "rxstream.core.tokens._splits", id="memory-of-splits"),
    pytest.param("_splitters", "rxstream.core.tokens._per_encoding", id="splitters"),
    pytest.param("_shared", "rxstream.core.tokens._per_encoding", id="shared-per-encoding"),
]


@pytest.mark.parametrize(("name", "home"), HOMES)
def test_a_name_set_on_the_package_is_set_where_it_is_read(name: str, home: str) -> None:
    module = importlib.import_module(home)
    before = getattr(module, name)
    marker = object()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens_module, name, marker)
        assert (getattr(tokens_module, name), getattr(module, name)) == (marker, marker)
    # Undone in both places.
    assert (getattr(tokens_module, name), getattr(module, name)) == (before, before)


def test_a_name_no_module_reads_stays_on_the_package() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens_module, "_not_read_anywhere", 1, raising=False)
        assert tokens_module._not_read_anywhere == 1  # type: ignore[attr-defined]
        for home in ("_splits", "_count", "_pieces", "_per_encoding", "_spec", "counter"):
            assert not hasattr(
                importlib.import_module(f"rxstream.core.tokens.{home}"), "_not_read_anywhere"
            )
    assert not hasattr(tokens_module, "_not_read_anywhere")
