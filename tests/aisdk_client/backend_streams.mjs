// What a real TypeScript backend writes: streamText(...).toUIMessageStreamResponse(), with
// the ai package's own mock model (ai/test) standing in for a provider.
//
// Output (stdout): JSON {scenario: {headers: {...}, body: "<the response body>"}}.
import { jsonSchema, streamText, tool } from "ai";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";

const USAGE = {
  inputTokens: { total: 12, noCache: 10, cacheRead: 2, cacheWrite: undefined },
  outputTokens: { total: 9, text: 6, reasoning: 3 },
};
const finish = (unified, raw) => ({ type: "finish", finishReason: { unified, raw }, usage: USAGE });

const SCENARIOS = {
  text: [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "resp-1", modelId: "mock", timestamp: new Date(0) },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Hello" },
    { type: "text-delta", id: "t1", delta: " world" },
    { type: "text-end", id: "t1" },
    finish("stop", "stop"),
  ],
  reasoning_sources: [
    { type: "stream-start", warnings: [] },
    { type: "reasoning-start", id: "r1" },
    { type: "reasoning-delta", id: "r1", delta: "Think." },
    { type: "reasoning-end", id: "r1" },
    { type: "source", sourceType: "url", id: "s1", url: "https://example.com/a", title: "A" },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Cited." },
    { type: "text-end", id: "t1" },
    finish("length", "max_tokens"),
  ],
  tool_call: [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Checking." },
    { type: "text-end", id: "t1" },
    { type: "tool-input-start", id: "call-1", toolName: "weather" },
    { type: "tool-input-delta", id: "call-1", delta: '{"city":' },
    { type: "tool-input-delta", id: "call-1", delta: '"Paris"}' },
    { type: "tool-input-end", id: "call-1" },
    { type: "tool-call", toolCallId: "call-1", toolName: "weather", input: '{"city":"Paris"}' },
    finish("tool-calls", "tool_calls"),
  ],
  error_mid_answer: [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Half" },
    { type: "error", error: "Overloaded: try again later" },
  ],
};

const weather = tool({
  description: "The weather in a city",
  inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } } }),
});

const out = {};
for (const [name, parts] of Object.entries(SCENARIOS)) {
  const model = new MockLanguageModelV3({
    doStream: async () => ({ stream: convertArrayToReadableStream(parts) }),
  });
  const result = streamText({
    model,
    prompt: "Hi",
    tools: { weather },
    onError: () => {}, // the error goes to the client in the stream; keep the console quiet
  });
  const response = result.toUIMessageStreamResponse({
    sendReasoning: true,
    sendSources: true,
    generateMessageId: () => `msg-${name}`,
    messageMetadata: ({ part }) => (part.type === "finish" ? { usage: part.totalUsage } : undefined),
    onError: (error) => (error instanceof Error ? error.message : String(error)),
  });
  out[name] = { headers: Object.fromEntries(response.headers), body: await response.text() };
}
process.stdout.write(JSON.stringify(out));
