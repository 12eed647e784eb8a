"""The Gemini request body (`{base}/v1/models/{model}:streamGenerateContent?alt=sse`).

Sans I/O.

Input: the conversation, tools and options (`read_input`). Output: a
`RequestSpec` without credentials.

Rules:

- system messages are joined into `systemInstruction`; the turns are
  `contents` with roles `user` and `model`; an `image_url` part is
  `inlineData` for a `data:` URL, else `fileData`; consecutive tool results
  go in one `user` turn as `functionResponse` parts (`id` and `name` of the
  call they answer, `response` the result's JSON object, else `{"output": text}`);
  a call that came without an id goes back without one, and so do the
  results that answer it by the id rxstream gave it (`is_generated_call_id`):
  Gemini pairs them by name and order, so such results go in the order of
  the calls (`matched_by_name`);
- an assistant turn goes back part by part in its order: text as `text`, a
  client call as `functionCall` (`name`, `args`, its `id` when it had one),
  a code-execution call and result as the parts they came as; a thought
  signature goes back byte for byte on the part it came on: the call it rode
  on, else the text (or thought) part just before it; a reasoning run goes
  back as a `thought` part only when a signature rode on it, and is left out
  otherwise (Gemini needs the signatures, not the thoughts);
- tools are one `{"functionDeclarations": [...]}` with
  `parametersJsonSchema` (a JSON Schema as written); a provider's own tool
  dict (`{"googleSearch": {}}`, ...) as it is;
- options go in `generationConfig`: `maxOutputTokens`, `temperature`,
  `stopSequences`, and `thinkingConfig` for `reasoning` (an int as
  `thinkingBudget`, an effort as `thinkingLevel`, both with
  `includeThoughts`; False as `thinkingBudget: 0`); `tool_choice` is
  `toolConfig.functionCallingConfig` (`AUTO`, `ANY`, `NONE`, or `ANY` with
  `allowedFunctionNames`);
- `output=` is `generationConfig.responseMimeType: "application/json"` and
  `responseJsonSchema`: the JSON Schema as written (`$defs`, `anyOf`, `null`
  kept), which Gemini 2.5 and later take. With `Output(openapi=True)` it is
  the older `responseSchema` instead, the OpenAPI 3.0 subset
  (`rxstream.core.schema.openapi_schema`: upper-case types, `nullable`,
  `$ref`s inlined), what google-genai derives from `response_schema=Model`,
  for older models and Vertex; and a forced tool (`via="tool"`) is then
  declared with `parameters` in that subset. A `generationConfig=` of the
  caller's own is kept beside them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ....models import (
    JSONObject,
    Message,
    MessageBlock,
    ReasoningBlock,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    Tool,
    ToolCall,
)
from ...schema import OutputSpec, openapi_schema
from ...tools import is_generated_call_id
from ..chat_input import (
    Assistant,
    RequestSpec,
    System,
    ToolResult,
    User,
    apply_extra,
    arguments_object,
    matched_by_name,
    merged_option,
    read_input,
    result_object,
)

__all__ = ["API_VERSION", "render_request"]

#: The API version sent unless the caller picks another (the google-genai SDK's default).
API_VERSION = "v1"

_SIGNATURE = "thought_signature"


def _user_part(part: JSONObject) -> JSONObject:
    kind = part.get("type")
    if kind == "text":
        return {"text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = str(image.get("url") if isinstance(image, dict) else image)
        if url.startswith("data:") and ";base64," in url:
            media, _, data = url[5:].partition(";base64,")
            return {"inlineData": {"mimeType": media, "data": data}}
        return {"fileData": {"fileUri": url}}
    return part


def _call_part(call: ToolCall) -> JSONObject:
    function: JSONObject = {"name": call.name, "args": arguments_object(call)}
    if call.id is not None and not is_generated_call_id(call.id):
        function["id"] = call.id
    return {"functionCall": function}


def _assistant(blocks: Sequence[MessageBlock]) -> list[JSONObject]:
    parts: list[JSONObject] = []
    call_parts: dict[int, JSONObject] = {}
    for i, block in enumerate(blocks):
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        signed_next = (
            isinstance(following, ReasoningState)
            and following.kind == _SIGNATURE
            and following.index is None
        )
        if isinstance(block, ReasoningBlock):
            if signed_next:
                parts.append({"text": block.text, "thought": True})
        elif isinstance(block, TextBlock):
            if block.text:
                parts.append({"text": block.text})
        elif isinstance(block, ToolCall):
            part = call_parts[block.index] = _call_part(block)
            parts.append(part)
        elif isinstance(block, ServerToolCall | ServerToolResult):
            if block.raw is not None:
                parts.append({k: v for k, v in block.raw.items() if k != "thoughtSignature"})
        elif isinstance(block, ReasoningState) and block.kind == _SIGNATURE:
            target = (
                call_parts.get(block.index)
                if block.index is not None
                else parts[-1]
                if parts and "thoughtSignature" not in parts[-1]
                else None
            )
            if target is None:
                # Nothing to ride on (the part was empty): the part as it came.
                raw = block.raw or {}
                target = {k: v for k, v in raw.items() if k != "thoughtSignature"}
                parts.append(target)
            target["thoughtSignature"] = block.data
    return parts


def _declaration(tool: Tool, output: OutputSpec | None) -> JSONObject:
    """A function declaration: `parametersJsonSchema`; `parameters` for an openapi forced tool."""
    if output is not None and output.openapi and output.via == "tool" and tool.name == output.name:
        params: JSONObject = {"parameters": openapi_schema(tool.parameters)}
    else:
        params = {"parametersJsonSchema": tool.parameters}
    return {"name": tool.name, "description": tool.description, **params}


def _thinking(value: str | int | bool) -> JSONObject:
    if value is False or value == "none":
        return {"thinkingBudget": 0}
    if value is True:
        return {"includeThoughts": True}
    if isinstance(value, int):
        return {"thinkingBudget": value, "includeThoughts": True}
    return {"thinkingLevel": value, "includeThoughts": True}


def render_request(
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    *,
    api_version: str = API_VERSION,
    **options: Any,
) -> RequestSpec:
    """The streaming `streamGenerateContent` request.

    Args:
        api_version: the API version in the path (`"v1"`, as the google-genai
            SDK sends by default; `"v1beta"` for features still in beta).

    Raises:
        ValueError, TypeError: see `read_input`.

    >>> spec = render_request("gemini-2.5-flash", [{"role": "user", "content": "Hi"}])
    >>> spec.path, spec.query, spec.body
    ('/v1/models/gemini-2.5-flash:streamGenerateContent', {'alt': 'sse'}, \
{'contents': [{'role': 'user', 'parts': [{'text': 'Hi'}]}]})
    """
    chat = read_input(model, messages, tools, options)
    opts = chat.options
    system: list[str] = []
    contents: list[JSONObject] = []

    def add(role: str, parts: list[JSONObject]) -> None:
        if contents and contents[-1]["role"] == role == "user":
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for turn in matched_by_name(chat.turns, "gemini"):
        match turn:
            case System(text=text):
                system.append(text)
            case User(parts=user_parts):
                add("user", [_user_part(p) for p in user_parts])
            case Assistant(blocks=blocks):
                add("model", _assistant(blocks))
            case ToolResult(call_id=call_id, name=name, content=content):
                response: JSONObject = {"name": name or call_id}
                if call_id is not None and not is_generated_call_id(call_id):
                    response["id"] = call_id
                response["response"] = result_object(content)
                add("user", [{"functionResponse": response}])
    body: JSONObject = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if chat.tools:
        declarations = [_declaration(t, opts.output) for t in chat.tools if isinstance(t, Tool)]
        native = [t for t in chat.tools if not isinstance(t, Tool)]
        body["tools"] = ([{"functionDeclarations": declarations}] if declarations else []) + native
    config: JSONObject = {}
    if opts.max_tokens is not None:
        config["maxOutputTokens"] = opts.max_tokens
    if opts.temperature is not None:
        config["temperature"] = opts.temperature
    if opts.stop:
        config["stopSequences"] = list(opts.stop)
    if opts.reasoning is not None:
        config["thinkingConfig"] = _thinking(opts.reasoning)
    if opts.output is not None and opts.output.via == "native":
        config["responseMimeType"] = "application/json"
        if opts.output.openapi:
            config["responseSchema"] = openapi_schema(opts.output.schema)
        else:
            config["responseJsonSchema"] = opts.output.schema
    extra = dict(opts.extra)
    if opts.output is not None and opts.output.via == "native":
        config = merged_option(extra, "generationConfig", config)
    if config:
        body["generationConfig"] = config
    if opts.tool_choice is not None:
        choice = opts.tool_choice
        modes = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
        calling: JSONObject = (
            {"mode": modes[choice]}
            if choice in modes
            else {"mode": "ANY", "allowedFunctionNames": [choice]}
        )
        body["toolConfig"] = {"functionCallingConfig": calling}
    apply_extra(body, extra)
    name = quote(chat.model.removeprefix("models/"), safe="")
    return RequestSpec(
        "POST", f"/{api_version}/models/{name}:streamGenerateContent", {"alt": "sse"}, {}, body
    )
