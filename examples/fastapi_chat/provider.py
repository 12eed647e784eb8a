"""Where answers come from: a provider's streaming endpoint, or the scripted one.

`Provider.from_env()` reads the settings (`CHAT_API`, `CHAT_BASE_URL`,
`CHAT_API_KEY`, `CHAT_MODEL`); `Provider.deltas(client, prompt)` is the
provider's stream as deltas, in any dialect: the request is the one
`rxstream chat --dialect NAME` sends (each API's path, auth header and body), the
answer decoded with `rs.decode(NAME)`. `fake_answer()` is what the scripted
model (`FakeLLMServer`) streams when no provider is set.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from reactivex import Observable, abc

import rxstream as rs
from rxstream.cli._apis import APIS, Ask, Request, build
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing.builders import ChatStream

__all__ = ["Provider", "fake_answer", "fake_base_url"]

#: Seconds the provider may take to its first item, and between two items.
FIRST_ITEM_TIMEOUT = 120.0
IDLE_TIMEOUT = 60.0


@dataclass(frozen=True)
class Provider:
    """One streaming chat endpoint.

    Attributes:
        api: the dialect (an `rxstream chat --dialect` name).
        base_url: the API root (`https://api.openai.com/v1`, ...).
        key: the API key (None: the API's usual environment variable, or none).
        model: the model (None: the API's default).
    """

    api: str = "openai-chat"
    base_url: str | None = None
    key: str | None = None
    model: str | None = None

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
        )

    def request(self, prompt: str, env: Mapping[str, str] | None = None) -> Request:
        """The streaming request that asks `prompt` (credentials in its headers)."""
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
        """The answer to `prompt` as deltas (cold: each subscription sends the request).

        Args:
            client: the app's HTTP client.
            prompt: the user's message.
            scheduler: where the timeouts' timers run (the event loop's scheduler).
        """
        request = self.request(prompt)
        source: Observable[Any] = rs.from_request(
            client,
            "POST",
            request.url,
            json=request.body,
            headers=request.headers,
            body="bytes" if request.wire == "eventstream" else "lines",
        )
        if request.wire == "sse":
            source = source.pipe(rs.sse_frames())
        elif request.wire == "eventstream":
            source = source.pipe(rs.eventstream_frames())
        # NDJSON (Ollama): the source's lines are the items.
        answer: Observable[rs.Delta] = source.pipe(
            rs.decode(request.api),
            rs.timeouts(first=FIRST_ITEM_TIMEOUT, idle=IDLE_TIMEOUT, scheduler=scheduler),
        )
        return answer


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
