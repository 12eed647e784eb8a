// Drive the AI SDK's own client against FakeLLMServer's "ai-sdk" answers (POST /api/chat).
//
// Input (stdin): JSON {"cases": [{"name": ..., "url": ..., "body": <optional>}, ...]}.
// For each case, two POSTs to the url (the server repeats its scenario):
//   1. a plain fetch, read to its end or its break: the status, the protocol header,
//      every chunk checked against the package's uiMessageChunkSchema, keep-alive
//      comments counted, whether `[DONE]` came, and how the body broke if it did;
//   2. the real client path, as useChat takes it: DefaultChatTransport.sendMessages
//      (with `body`, when given, as the whole request body, through the transport's
//      own prepareSendMessagesRequest hook), its chunks read by readUIMessageStream.
// Output (stdout): JSON {name: {status, header, text, chunks, invalid, done, keepalives,
//   broke, message, finishReason, errors, thrown}}: `errors` what onError got (an
//   `error` chunk), `thrown` what the transport or the stream threw (null: nothing).
import { DefaultChatTransport, readUIMessageStream, uiMessageChunkSchema } from "ai";

const USER = { id: "user-1", role: "user", parts: [{ type: "text", text: "Hi" }] };
const BODY = { id: "chat-1", messages: [USER], trigger: "submit-message" };

async function readStdin() {
  let text = "";
  for await (const piece of process.stdin) text += piece;
  return JSON.parse(text);
}

async function checkBody(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? BODY),
  });
  let text = "";
  let broke = null;
  const decoder = new TextDecoder();
  try {
    for await (const piece of response.body) text += decoder.decode(piece, { stream: true });
  } catch (error) {
    broke = `${error.name}: ${error.message}`;
  }
  const schema = uiMessageChunkSchema();
  const chunks = [];
  const invalid = [];
  let done = false;
  let keepalives = 0;
  if (response.ok) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(":")) keepalives += 1;
        else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
      }
      if (data.length === 0) continue;
      const joined = data.join("\n");
      if (joined === "[DONE]") {
        done = true;
        continue;
      }
      let value;
      try {
        value = JSON.parse(joined);
      } catch (error) {
        invalid.push({ data: joined, error: String(error) });
        continue;
      }
      const result = await schema.validate(value);
      if (!result.success) invalid.push({ data: joined, error: String(result.error) });
      chunks.push(value);
    }
  }
  return {
    status: response.status,
    header: response.headers.get("x-vercel-ai-ui-message-stream"),
    text: response.ok ? null : text,
    chunks,
    invalid,
    done,
    keepalives,
    broke,
  };
}

async function readWithClient(url, body) {
  const options = { api: url };
  if (body !== undefined) options.prepareSendMessagesRequest = () => ({ body });
  const transport = new DefaultChatTransport(options);
  let finishReason = null;
  const errors = [];
  let message = null;
  try {
    const stream = await transport.sendMessages({
      chatId: "chat-1",
      messages: [USER],
      abortSignal: undefined,
      trigger: "submit-message",
      messageId: undefined,
    });
    const watched = stream.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          if (chunk.type === "finish") finishReason = chunk.finishReason ?? null;
          controller.enqueue(chunk);
        },
      }),
    );
    for await (const snapshot of readUIMessageStream({
      stream: watched,
      onError: (error) => errors.push(error.message),
    })) {
      message = snapshot;
    }
  } catch (error) {
    return { message, finishReason, errors, thrown: `${error.name}: ${error.message}` };
  }
  return { message, finishReason, errors, thrown: null };
}

const { cases } = await readStdin();
const results = {};
for (const { name, url, body } of cases) {
  try {
    results[name] = { ...(await checkBody(url, body)), ...(await readWithClient(url, body)) };
  } catch (error) {
    results[name] = { failure: `${error.name}: ${error.message}` };
  }
}
process.stdout.write(JSON.stringify(results));
