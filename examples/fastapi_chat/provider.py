"""Where answers come from: a provider's streaming endpoint, or the scripted one.

`Provider.from_env()` reads the settings (`CHAT_API`, `CHAT_BASE_URL`,
`CHAT_API_KEY`, `CHAT_MODEL`, and a fallback route: `CHAT_FALLBACK_API`,
`CHAT_FALLBACK_BASE_URL`, `CHAT_FALLBACK_API_KEY`, `CHAT_FALLBACK_MODEL`);
`Provider.deltas(client, prompt)` is the answer as deltas, in any dialect:
`rs.chat(..., retry=RETRY, fallback=[...])`, so a 429 or an overloaded provider is
retried, a stream cut after output is continued, and when the provider gives up
the fallback route answers, all as one stream. A route with no key is left
out (a warning in the log); with none left, the stream is one `rs.StreamError`
that names the settings to set, so the page (and Redis followers) say why
instead of the app answering 500. `fake_answer()` is what the scripted model
(`FakeLLMServer`) streams when no provider is set.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
import reactivex
from reactivex import Observable, abc

import rxstream as rs
from rxstream.cli._apis import APIS, Ask, Request, build, missing_key
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing.builders import ChatStream

__all__ = ["Provider", "fake_answer", "fake_base_url"]

log = logging.getLogger("examples.fastapi_chat")

#: Seconds the provider may take to its first item, and between two items.
FIRST_ITEM_TIMEOUT = 120.0
IDLE_TIMEOUT = 60.0

#: Three attempts a route, a cut after output continued (the followers see one answer),
#: each attempt timed; no attempt starts later than five minutes in.
RETRY = rs.Retry(
    attempts=3,
    deadline=300.0,
    after_output="continue",
    first=FIRST_ITEM_TIMEOUT,
    idle=IDLE_TIMEOUT,
)


@dataclass(frozen=True)
class Provider:
    """One streaming chat endpoint.

    Attributes:
        api: the dialect (an `rxstream chat --dialect` name).
        base_url: the API root (`https://api.openai.com/v1`, ...).
        key: the API key (None: the API's usual environment variable, or none).
        model: the model (None: the API's default).
        fallback: the routes asked, in order, once this one gives up.
    """

    api: str = "openai-chat"
    base_url: str | None = None
    key: str | None = None
    model: str | None = None
    fallback: tuple[rs.Route, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Provider:
        """The provider the environment names.

        Raises:
            ValueError: an unknown `CHAT_API`.
        """
        env = os.environ if env is None else env
        api = env.get("CHAT_API") or "openai-chat"
        if api not in APIS:
            raise ValueError(f"CHAT_API must be one of {', '.join(APIS)}, not {api!r}")
        return cls(
            api,
            env.get("CHAT_BASE_URL") or None,
            env.get("CHAT_API_KEY") or None,
            env.get("CHAT_MODEL") or None,
            _fallback(env),
        )

    def request(self, prompt: str, env: Mapping[str, str] | None = None) -> Request:
        """The request `rxstream chat --dialect` sends for `prompt` on the first route (credentials
        in its headers): what the settings mean, to check them; `deltas` asks through `rs.chat`."""
        env = dict(os.environ if env is None else env)
        if self.key:
            env[APIS[self.api].key_variables[0]] = self.key
        return build(self.api, Ask(prompt, model=self.model), base_url=self.base_url, env=env)

    def deltas(
        self,
        client: httpx.AsyncClient,
        prompt: str,
        *,
        scheduler: abc.SchedulerBase | None = None,
    ) -> Observable[rs.Delta]:
        """The answer to `prompt` as deltas (cold: each subscription runs the attempts).

        Routes without a key are left out; with none left, or a request that cannot be
        built, the observable ends at once with an `rs.StreamError` saying why (what a
        server stores for its followers, where raising would answer 500).

        Args:
            client: the app's HTTP client.
            prompt: the user's message.
            scheduler: where the waits and the timeouts' timers run (the event loop's).
        """
        ready, unusable = self.usable_routes()
        for reason in unusable:
            log.warning("route left out: %s", reason)
        if not ready:
            return reactivex.throw(rs.StreamError("no route can be asked: " + "; ".join(unusable)))
        first, *rest = ready
        try:
            return rs.chat(
                client,
                first.dialect,
                model=first.model,
                messages=[{"role": "user", "content": prompt}],
                retry=RETRY,
                fallback=rest,
                scheduler=scheduler,
                **first.options,
            )
        except ValueError as exc:  # the settings make no request: say so in the stream
            return reactivex.throw(rs.StreamError(f"the request cannot be built: {exc}"))

    def routes(self) -> list[tuple[rs.Route, str]]:
        """Every route, in order, with the setting that holds its key (`CHAT_API_KEY`, ...)."""
        options = {"base_url": self.base_url, "api_key": self.key}
        first = rs.Route(
            self.api,
            self.model or APIS[self.api].default_model,
            **{name: value for name, value in options.items() if value},
        )
        return [(first, "CHAT_API_KEY"), *((r, "CHAT_FALLBACK_API_KEY") for r in self.fallback)]

    def usable_routes(
        self, env: Mapping[str, str] | None = None
    ) -> tuple[list[rs.Route], list[str]]:
        """The routes that can be asked (a key given or in the environment, or none needed),
        and why each other one cannot, in words."""
        env = os.environ if env is None else env
        ready: list[rs.Route] = []
        unusable: list[str] = []
        for route, setting in self.routes():
            missing = None if route.options.get("api_key") else missing_key(route.dialect, env)
            if missing is None:
                ready.append(route)
            else:
                words = missing.removesuffix(", or pass api_key=")
                unusable.append(f"{words} (or {setting})")
        return ready, unusable


def _fallback(env: Mapping[str, str]) -> tuple[rs.Route, ...]:
    """The fallback route `CHAT_FALLBACK_*` names (none without `CHAT_FALLBACK_API`)."""
    api = env.get("CHAT_FALLBACK_API")
    if not api:
        return ()
    if api not in APIS:
        raise ValueError(f"CHAT_FALLBACK_API must be one of {', '.join(APIS)}, not {api!r}")
    options = {
        name: value
        for name, value in (
            ("base_url", env.get("CHAT_FALLBACK_BASE_URL")),
            ("api_key", env.get("CHAT_FALLBACK_API_KEY")),
        )
        if value
    }
    model = env.get("CHAT_FALLBACK_MODEL") or APIS[api].default_model
    return (rs.Route(api, model, **options),)


def fake_base_url(server: FakeLLMServer, api: str) -> str:
    """The API root on `server` under which `api`'s real path is served."""
    return server.base_url if api.startswith("openai") else f"http://127.0.0.1:{server.port}"


_REASONING = (
    "The user asked about the weather in Lisbon. I cannot know it myself, so I will "
    "call get_weather, and meanwhile say what I am doing."
)
_TEXT = (
    "Here is what I know. Lisbon has a mild climate: warm, dry summers and wet winters "
    "with little frost. Spring and autumn are the kindest seasons to visit, with long "
    "light evenings by the river. Let me look up today's weather for you."
)
_CALL = rs.ToolCall(0, "call_lisbon", "get_weather", json.dumps({"city": "Lisbon", "unit": "C"}))


def fake_answer(pace: float = 0.05) -> Scenario:
    """The scripted model's answer: reasoning, text, a tool call, usage; `pace` s per chunk."""
    words = re.compile(r"\s*\S+")
    reasoning, text = words.findall(_REASONING), words.findall(_TEXT)
    stream = (
        ChatStream(model="fake-chat-model", id="chatcmpl-example")
        .role()
        .reasoning(*reasoning)
        .text(*text)
        .tool_calls([_CALL], fragments=4)
        .finish("tool_calls")
        .usage(24, len(reasoning) + len(text) + 12, reasoning_tokens=len(reasoning))
        .done()
    )
    return Scenario.from_stream(stream).paced(pace, first=pace * 4)
