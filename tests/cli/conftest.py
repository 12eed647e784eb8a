"""Run the command in-process (`rxstream.cli.main`), so coverage sees it; a clean environment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from rxstream.cli import main
from rxstream.cli._apis import APIS, KEY_VARIABLES


@dataclass(frozen=True)
class Done:
    """What one run of the command gave."""

    code: int
    out: str
    err: str

    @property
    def footer(self) -> str:
        return self.out.strip().splitlines()[-1]


Run = Callable[..., Done]


#: Every variable `chat` reads (keys, base URLs, models, the AWS region), besides OPENAI_*.
API_VARIABLES = {
    name
    for api in APIS.values()
    for name in (*api.key_variables, *api.base_variables, *api.model_variables)
} | {*KEY_VARIABLES, "AWS_REGION", "AWS_DEFAULT_REGION"}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No OPENAI_* variable, no key, base URL or model of any API, and no TERM from the
    developer's shell."""
    import os

    for name in [name for name in os.environ if name.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    for name in API_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TERM", raising=False)
    return monkeypatch


@pytest.fixture
def rxstream(capsys: pytest.CaptureFixture[str], clean_env: pytest.MonkeyPatch) -> Run:
    """`rxstream(*args, **env)`: run the command in this process; its exit code and output."""

    def run(*args: str, **env: str) -> Done:
        for name, value in env.items():
            clean_env.setenv(name, value)
        capsys.readouterr()  # what came before is not this run's
        code = main(list(args))
        captured = capsys.readouterr()
        return Done(code, captured.out, captured.err)

    return run
