"""The command's token counting never downloads: only encodings already on disk are used."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxstream.cli._tokens import offline_encoding

tiktoken = pytest.importorskip("tiktoken")


def test_an_unknown_encoding_is_reported_not_raised() -> None:
    encoding, note = offline_encoding("no_such_encoding")
    assert encoding is None
    assert note == "tiktoken has no offline copy of no_such_encoding"


def test_a_remote_only_encoding_is_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    encoding, note = offline_encoding("r50k_base")
    assert encoding is None
    assert "no offline copy" in note
    assert list(tmp_path.iterdir()) == []  # nothing fetched into the cache
    assert tiktoken.load.read_file.__name__ == "read_file"  # the guard is undone


def test_the_default_finds_an_encoding_on_disk_when_there_is_one() -> None:
    encoding, note = offline_encoding()
    if encoding is None:
        assert "no offline copy" in note
    else:
        assert note == encoding.name
        assert len(encoding.encode_ordinary("hello world")) == 2
