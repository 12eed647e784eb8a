// The official JavaScript clients reading FakeLLMServer, one summary per case.
//
// Input (stdin): JSON {"cases": [{"name", "dialect", "reader", "base"}, ...]}: `base` the
// server's root URL, `reader` "sdk" (the provider's own npm SDK, used as its docs show)
// or "ai-sdk" (`streamText` of the `ai` package over the dialect's `@ai-sdk/*` provider).
// Output (stdout): JSON {name: {text, reasoning, calls, finish, usage, error}}: `calls`
// [id, name, parsed arguments] in order, `finish` the provider's own word (the AI SDK's
// `rawFinishReason`) and `unified` the AI SDK's finish, `usage` [input, output] in
// rxstream's sense (every input token, every output token, reasoning included) or null,
// `error` what the client threw or reported ("Name: message"), null when nothing.
// All cases run in this one process, one after another.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { CohereClientV2 } from "cohere-ai";
import { Ollama } from "ollama";
import { BedrockRuntimeClient, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { jsonSchema, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createCohere } from "@ai-sdk/cohere";
import { createAmazonBedrock } from "@ai-sdk/amazon-bedrock";
import { createOllama } from "ollama-ai-provider-v2";

// The AI SDK logs its warnings (an unknown model's limits) with console.info: on stdout,
// where the results go.
globalThis.AI_SDK_LOG_WARNINGS = false;

const MODEL = "fake-model";
const MESSAGES = [{ role: "user", content: "Hi" }];

function blank() {
  return { text: "", reasoning: "", calls: [], finish: null, unified: null, usage: null, error: null };
}

// Arguments as a user parses them: the JSON value, or the text when it is no JSON.
function parsed(text) {
  if (typeof text !== "string") return text ?? {};
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function described(error) {
  return `${error?.name ?? "Error"}: ${error?.message ?? String(error)}`;
}

// ------------------------------------------------------------------------ the provider SDKs

async function openaiChat(base, out) {
  const client = new OpenAI({ apiKey: "sk-test", baseURL: `${base}/v1`, maxRetries: 0 });
  const stream = client.chat.completions.stream({ model: MODEL, messages: MESSAGES });
  // The helper's accumulated completion (`finalChatCompletion` also refuses a `length` end).
  let snapshot;
  stream.on("chunk", (_, next) => {
    snapshot = next;
  });
  try {
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        const piece = choice.delta?.reasoning_content;
        if (choice.index === 0 && typeof piece === "string") out.reasoning += piece;
      }
      if (chunk.usage) out.usage = [chunk.usage.prompt_tokens, chunk.usage.completion_tokens];
    }
  } finally {
    const first = snapshot?.choices.find((c) => c.index === 0);
    if (first) {
      out.text = first.message.content ?? "";
      for (const call of first.message.tool_calls ?? []) {
        out.calls.push([call.id, call.function.name, parsed(call.function.arguments)]);
      }
      out.finish = first.finish_reason ?? null;
    }
  }
}

async function openaiResponses(base, out) {
  const client = new OpenAI({ apiKey: "sk-test", baseURL: `${base}/v1`, maxRetries: 0 });
  let final = null;
  for await (const event of client.responses.stream({ model: MODEL, input: "Hi" })) {
    if (event.type === "error") {
      throw new Error(`error event: ${event.message ?? event.error?.message} (code ${JSON.stringify(event.code ?? event.error?.code)})`);
    }
    if (event.type === "response.output_text.delta") out.text += event.delta;
    if (["response.completed", "response.incomplete", "response.failed"].includes(event.type)) {
      final = event.response;
    }
  }
  if (final === null) return;
  out.text = "";
  for (const item of final.output) {
    if (item.type === "message") {
      for (const part of item.content) if (part.type === "output_text") out.text += part.text;
    } else if (item.type === "reasoning") {
      out.reasoning += (item.summary ?? []).map((s) => s.text).join("");
      out.reasoning += (item.content ?? []).map((c) => c.text).join("");
    } else if (item.type === "function_call") {
      out.calls.push([item.call_id, item.name, parsed(item.arguments)]);
    }
  }
  if (final.usage) out.usage = [final.usage.input_tokens, final.usage.output_tokens];
  out.finish = final.status === "incomplete" ? final.incomplete_details?.reason ?? null : final.status;
}

async function anthropic(base, out) {
  const client = new Anthropic({ apiKey: "sk-ant-test", baseURL: base, maxRetries: 0 });
  const stream = client.messages.stream({ model: MODEL, max_tokens: 64, messages: MESSAGES });
  stream.on("text", (piece) => {
    out.text += piece; // what arrived, should the stream fail before its final message
  });
  const final = await stream.finalMessage();
  out.text = "";
  for (const block of final.content) {
    if (block.type === "text") out.text += block.text;
    else if (block.type === "thinking") out.reasoning += block.thinking;
    else if (block.type === "tool_use") out.calls.push([block.id, block.name, block.input]);
  }
  const u = final.usage;
  const prompt =
    (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
  out.usage = [prompt, u.output_tokens];
  out.finish = final.stop_reason;
}

async function gemini(base, out) {
  const client = new GoogleGenAI({
    apiKey: "test-key",
    httpOptions: { baseUrl: base, apiVersion: "v1beta" },
  });
  const stream = await client.models.generateContentStream({ model: MODEL, contents: "Hi" });
  for await (const chunk of stream) {
    for (const candidate of chunk.candidates ?? []) {
      if ((candidate.index ?? 0) !== 0) continue;
      for (const part of candidate.content?.parts ?? []) {
        if (part.functionCall?.name != null) {
          const call = part.functionCall;
          out.calls.push([call.id ?? null, call.name, call.args ?? {}]);
        } else if (typeof part.text === "string") {
          if (part.thought) out.reasoning += part.text;
          else out.text += part.text;
        }
      }
      if (candidate.finishReason != null) out.finish = candidate.finishReason;
    }
    const meta = chunk.usageMetadata;
    if (meta?.promptTokenCount != null) {
      out.usage = [
        meta.promptTokenCount,
        (meta.candidatesTokenCount ?? 0) + (meta.thoughtsTokenCount ?? 0),
      ];
    }
  }
}

async function cohere(base, out) {
  const client = new CohereClientV2({ token: "test-key", environment: base });
  const stream = await client.chatStream({ model: MODEL, messages: MESSAGES }, { maxRetries: 0 });
  const calls = new Map();
  try {
    for await (const event of stream) {
      const message = event.delta?.message;
      if (event.type === "content-delta") {
        out.text += message?.content?.text ?? "";
        out.reasoning += message?.content?.thinking ?? "";
      } else if (event.type === "tool-plan-delta") {
        out.reasoning += message?.toolPlan ?? "";
      } else if (event.type === "tool-call-start") {
        const call = message.toolCalls;
        calls.set(event.index, [call.id, call.function.name, call.function.arguments ?? ""]);
      } else if (event.type === "tool-call-delta") {
        calls.get(event.index)[2] += message.toolCalls.function.arguments ?? "";
      } else if (event.type === "message-end") {
        out.finish = event.delta.finishReason ?? null;
        const tokens = event.delta.usage?.tokens;
        if (tokens?.inputTokens != null) out.usage = [tokens.inputTokens, tokens.outputTokens ?? 0];
        if (event.delta.error) throw new Error(`message-end error: ${event.delta.error}`);
      }
    }
  } finally {
    const order = [...calls.keys()].sort((a, b) => a - b);
    out.calls = order.map((i) => [calls.get(i)[0], calls.get(i)[1], parsed(calls.get(i)[2])]);
  }
}

async function ollama(base, out) {
  const client = new Ollama({ host: base });
  for await (const chunk of await client.chat({ model: MODEL, messages: MESSAGES, stream: true })) {
    out.text += chunk.message?.content ?? "";
    out.reasoning += chunk.message?.thinking ?? "";
    for (const call of chunk.message?.tool_calls ?? []) {
      out.calls.push([call.id ?? null, call.function.name, call.function.arguments]);
    }
    if (chunk.done) {
      out.finish = chunk.done_reason ?? null;
      if (chunk.prompt_eval_count != null || chunk.eval_count != null) {
        out.usage = [chunk.prompt_eval_count ?? 0, chunk.eval_count ?? 0];
      }
    }
  }
}

async function bedrock(base, out) {
  const client = new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint: base,
    credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" },
    maxAttempts: 1,
    // The client's default handler speaks HTTP/2 only (for its bidirectional commands),
    // which Bedrock negotiates over TLS; the fake server is HTTP/1.1 on plain TCP.
    requestHandler: new NodeHttpHandler(),
  });
  const calls = new Map();
  try {
    const response = await client.send(
      new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: "user", content: [{ text: "Hi" }] }] }),
    );
    for await (const event of response.stream) {
      if (event.contentBlockStart) {
        const use = event.contentBlockStart.start?.toolUse;
        if (use && use.type == null) calls.set(event.contentBlockStart.contentBlockIndex, [use.toolUseId, use.name, ""]);
      } else if (event.contentBlockDelta) {
        const { delta, contentBlockIndex } = event.contentBlockDelta;
        if (delta.text != null) out.text += delta.text;
        else if (delta.reasoningContent) out.reasoning += delta.reasoningContent.text ?? "";
        else if (delta.toolUse && calls.has(contentBlockIndex)) calls.get(contentBlockIndex)[2] += delta.toolUse.input;
      } else if (event.messageStop) {
        out.finish = event.messageStop.stopReason;
      } else if (event.metadata?.usage) {
        const u = event.metadata.usage;
        const prompt = u.inputTokens + (u.cacheReadInputTokens ?? 0) + (u.cacheWriteInputTokens ?? 0);
        out.usage = [prompt, u.outputTokens];
      }
    }
  } finally {
    const order = [...calls.keys()].sort((a, b) => a - b);
    out.calls = order.map((i) => [calls.get(i)[0] || null, calls.get(i)[1], parsed(calls.get(i)[2])]);
    client.destroy();
  }
}

const SDKS = {
  "openai-chat": openaiChat,
  "openai-responses": openaiResponses,
  anthropic,
  gemini,
  cohere,
  ollama,
  bedrock,
};

// ------------------------------------------------------------------------ the AI SDK

function providerModel(dialect, base) {
  switch (dialect) {
    case "openai-chat":
      return createOpenAI({ apiKey: "sk-test", baseURL: `${base}/v1` }).chat(MODEL);
    case "openai-responses":
      return createOpenAI({ apiKey: "sk-test", baseURL: `${base}/v1` }).responses(MODEL);
    case "anthropic":
      return createAnthropic({ apiKey: "sk-ant-test", baseURL: `${base}/v1` })(MODEL);
    case "gemini":
      return createGoogleGenerativeAI({ apiKey: "test-key", baseURL: `${base}/v1beta` })(MODEL);
    case "cohere":
      return createCohere({ apiKey: "test-key", baseURL: `${base}/v2` })(MODEL);
    case "ollama":
      return createOllama({ baseURL: `${base}/api` })(MODEL);
    case "bedrock":
      return createAmazonBedrock({
        region: "us-east-1",
        baseURL: base,
        accessKeyId: "AKIDTEST",
        secretAccessKey: "secret",
      })(MODEL);
    default:
      throw new Error(`no AI SDK provider for ${dialect}`);
  }
}

// Client tools without `execute`: streamText hands their calls over and stops.
const TOOLS = {
  weather: tool({ description: "weather", inputSchema: jsonSchema({ type: "object" }) }),
  search: tool({ description: "search", inputSchema: jsonSchema({ type: "object" }) }),
};

async function aiSdk(dialect, base, out) {
  const result = streamText({
    model: providerModel(dialect, base),
    prompt: "Hi",
    tools: TOOLS,
    maxRetries: 0,
    onError: () => {}, // reported in the stream as an `error` part, read below
  });
  const errors = [];
  for await (const part of result.fullStream) {
    switch (part.type) {
      case "text-delta":
        out.text += part.text;
        break;
      case "reasoning-delta":
        out.reasoning += part.text;
        break;
      case "tool-call":
        out.calls.push([part.toolCallId, part.toolName, part.input]);
        break;
      case "tool-error":
        errors.push(`tool-error ${part.toolName}: ${described(part.error)}`);
        break;
      case "finish":
        out.unified = part.finishReason ?? null;
        out.finish = part.rawFinishReason ?? null;
        if (part.totalUsage?.inputTokens !== undefined || part.totalUsage?.outputTokens !== undefined) {
          out.usage = [part.totalUsage.inputTokens ?? null, part.totalUsage.outputTokens ?? null];
        }
        break;
      case "error":
        errors.push(described(part.error));
        break;
      default:
        break;
    }
  }
  if (errors.length > 0) out.error = errors.join(" | ");
}

// ------------------------------------------------------------------------ main

async function readStdin() {
  let text = "";
  for await (const piece of process.stdin) text += piece;
  return JSON.parse(text);
}

const { cases } = await readStdin();
const results = {};
// A client whose promise never settles leaves nothing to wait on and node would exit
// silently: say which case was running instead.
let running = null;
process.on("exit", (code) => {
  if (running !== null) {
    process.stderr.write(`node exited (code ${code}) while reading ${running}\n`);
    process.exitCode = 3;
  }
});
for (const { name, dialect, reader, base } of cases) {
  running = name;
  // RXSTREAM_JS_TRACE=1: each case's name on stderr as it starts (to find a client that hangs).
  if (process.env.RXSTREAM_JS_TRACE) process.stderr.write(`case ${name}\n`);
  const out = blank();
  try {
    if (reader === "ai-sdk") await aiSdk(dialect, base, out);
    else await SDKS[dialect](base, out);
  } catch (error) {
    out.error = described(error);
  }
  results[name] = out;
}
running = null;
process.stdout.write(JSON.stringify(results));
