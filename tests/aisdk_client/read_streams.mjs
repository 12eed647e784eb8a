// Drive the AI SDK's own client against rxstream's "ai-sdk" rendering.
//
// Input (stdin): JSON {"cases": [{"name": ..., "url": ...}, ...]}.
// For each case, two POSTs to the url (a server on 127.0.0.1):
//   1. a plain fetch of the body: the response headers, and every chunk checked
//      against the package's own uiMessageChunkSchema (and keep-alives counted);
//   2. the real client path: DefaultChatTransport.sendMessages, its chunks read by
//      readUIMessageStream, as useChat does.
// Output (stdout): JSON {name: {header, chunks, invalid, done, keepalives,
//   message, finishReason, errors}}.
import { DefaultChatTransport, readUIMessageStream, uiMessageChunkSchema } from "ai";

const USER = { id: "user-1", role: "user", parts: [{ type: "text", text: "Hi" }] };

async function readStdin() {
  let text = "";
  for await (const piece of process.stdin) text += piece;
  return JSON.parse(text);
}

async function checkBody(url) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: "chat-1", messages: [USER], trigger: "submit-message" }),
  });
  const schema = uiMessageChunkSchema();
  const body = await response.text();
  const chunks = [];
  const invalid = [];
  let done = false;
  let keepalives = 0;
  for (const block of body.split(/\r?\n\r?\n/)) {
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) keepalives += 1;
      else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
    }
    if (data.length === 0) continue;
    const text = data.join("\n");
    if (text === "[DONE]") {
      done = true;
      continue;
    }
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      invalid.push({ data: text, error: String(error) });
      continue;
    }
    const result = await schema.validate(value);
    if (!result.success) invalid.push({ data: text, error: String(result.error) });
    chunks.push(value);
  }
  return {
    status: response.status,
    header: response.headers.get("x-vercel-ai-ui-message-stream"),
    chunks,
    invalid,
    done,
    keepalives,
  };
}

async function readWithClient(url) {
  const transport = new DefaultChatTransport({ api: url });
  const stream = await transport.sendMessages({
    chatId: "chat-1",
    messages: [USER],
    abortSignal: undefined,
    trigger: "submit-message",
    messageId: undefined,
  });
  let finishReason = null;
  const errors = [];
  const watched = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        if (chunk.type === "finish") finishReason = chunk.finishReason ?? null;
        controller.enqueue(chunk);
      },
    }),
  );
  let message = null;
  for await (const snapshot of readUIMessageStream({
    stream: watched,
    onError: (error) => errors.push(error.message),
  })) {
    message = snapshot;
  }
  return { message, finishReason, errors };
}

const { cases } = await readStdin();
const results = {};
for (const { name, url } of cases) {
  try {
    results[name] = { ...(await checkBody(url)), ...(await readWithClient(url)) };
  } catch (error) {
    results[name] = { failure: `${error.name}: ${error.message}` };
  }
}
process.stdout.write(JSON.stringify(results));
