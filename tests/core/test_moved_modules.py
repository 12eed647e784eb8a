"""The modules that moved keep working for one release, with a warning that names the new path."""

from __future__ import annotations

import importlib

import pytest

import rxstream.core as core
from rxstream import models
from rxstream.core import dialects
from rxstream.core.dialects import openai_chat
from rxstream.core.dialects.openai_chat import reader

# old module -> {name: (the new home, its name there)}
MOVED = {
    "rxstream.core.chunks": {
        "ChunkDecoder": (openai_chat, "ChunkDecoder"),
        "ChatFrameDecoder": (openai_chat, "ChatFrameDecoder"),
        "OnMalformed": (dialects, "OnMalformed"),
    },
    "rxstream.core.deltas": {
        "DELTA_CLASSES": (models, "DELTA_CLASSES"),
        "DeltaDecoder": (openai_chat, "DeltaDecoder"),
        "ChunkReader": (reader, "ChunkReader"),
        "TOO_DEEP": (reader, "TOO_DEEP"),
        "chunk_text": (reader, "chunk_text"),
        "parse_usage": (reader, "parse_usage"),
        "deltas_of": (openai_chat, "deltas_of"),
        "json_kind": (dialects, "json_kind"),
        "FieldError": (dialects, "ShapeError"),
    },
}

CASES = [(old, name, *new) for old, names in MOVED.items() for name, new in names.items()]


@pytest.mark.parametrize(("old", "name", "home", "new_name"), CASES, ids=lambda v: str(v))
def test_an_old_path_warns_naming_the_new_one_and_gives_the_same_object(
    old: str, name: str, home: object, new_name: str
) -> None:
    module = importlib.import_module(old)  # importing alone does not warn
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is deprecated, use "):
        value = getattr(module, name)
    if name == "FieldError":  # a ShapeError that keeps FieldError's argument order
        assert issubclass(value, getattr(home, new_name))
    else:
        assert value is getattr(home, new_name)


def test_the_old_modules_list_every_moved_name_and_nothing_else() -> None:
    for old, names in MOVED.items():
        module = importlib.import_module(old)
        assert sorted(module.__all__) == sorted(names)
        with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
            module.Nope  # noqa: B018


def test_the_core_still_exports_the_chat_machines() -> None:
    assert core.ChunkDecoder is openai_chat.ChunkDecoder
    assert core.DeltaDecoder is openai_chat.DeltaDecoder


def test_field_error_is_the_one_shape_error() -> None:
    error = dialects.ShapeError("choices", "an array or null", 1)
    assert isinstance(error, ValueError)
    assert (error.path, error.reason) == (
        "choices",
        "choices is a JSON number, not an array or null",
    )
