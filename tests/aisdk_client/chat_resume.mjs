// useChat's own logic (the ai package's AbstractChat, as React's useChat runs it) against
// examples/ai_sdk_chat: a page reload mid-answer, a dropped connection, and a resume
// after the end.
//
// Input (stdin): JSON {"api": "http://127.0.0.1:PORT/api/chat", "question": "..."}.
// Output (stdout): JSON {reload: {...}, dropped: {...}, finished: {...}}.
import { DefaultChatTransport } from "ai";
import { Chat, copy, sleep } from "./chat.mjs";


const { api, question } = JSON.parse(await new Response(process.stdin).text());
const errors = [];
const onError = (error) => errors.push(`${error.name}: ${error.message}`);

async function until(condition, what) {
  for (let i = 0; i < 2000; i++) {
    if (condition()) return;
    await sleep(5);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function answerText(chat) {
  const last = chat.messages.at(-1);
  if (last?.role !== "assistant") return "";
  return last.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
}

// 1. The page reloads mid-answer: the first page stops reading; a new page (the same
//    chat id, the user's message as the page stored it) asks to resume.
async function reload() {
  const page = new Chat({ id: "chat-reload", transport: new DefaultChatTransport({ api }), onError });
  const sending = page.sendMessage({ text: question });
  await until(() => answerText(page).length > 0, "the first words of the answer");
  const partial = copy(page.messages.at(-1));
  await page.stop();
  await sending;
  const userMessage = copy(page.messages[0]);
  const reloaded = new Chat({
    id: "chat-reload",
    messages: [userMessage],
    transport: new DefaultChatTransport({ api }),
    onError,
  });
  await reloaded.resumeStream();
  return { partial, messages: copy(reloaded.messages), status: reloaded.status };
}

// 2. The connection drops mid-answer (a network error after some bytes): the same
//    page resumes, and the partial message is replaced, not doubled.
async function dropped() {
  let cut = false;
  const cutting = async (url, init) => {
    const response = await fetch(url, init);
    if (init?.method !== "POST" || cut) return response;
    cut = true;
    const reader = response.body.getReader();
    let seen = 0;
    const body = new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        seen += value.length;
        if (seen > 600) {
          await reader.cancel();
          return controller.error(new TypeError("network error"));
        }
        controller.enqueue(value);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  const page = new Chat({
    id: "chat-dropped",
    transport: new DefaultChatTransport({ api, fetch: cutting }),
    onError,
  });
  await page.sendMessage({ text: question });
  const afterDrop = { status: page.status, messages: copy(page.messages) };
  await page.resumeStream();
  return { afterDrop, messages: copy(page.messages), status: page.status };
}

// 3. Nothing runs any more: a resume gets 204 and the page keeps what it has. (The
//    server drops its "running" mark just after the end is stored, so wait for that.)
async function finished(messages) {
  const resumeUrl = `${api}/chat-reload/stream`;
  for (let i = 0; i < 400 && (await fetch(resumeUrl)).status !== 204; i++) await sleep(5);
  const statuses = [];
  const recording = async (url, init) => {
    const response = await fetch(url, init);
    statuses.push(response.status);
    return response;
  };
  const page = new Chat({
    id: "chat-reload",
    messages,
    transport: new DefaultChatTransport({ api, fetch: recording }),
    onError,
  });
  await page.resumeStream();
  return { messages: copy(page.messages), status: page.status, statuses };
}

const results = {};
results.reload = await reload();
results.dropped = await dropped();
results.finished = await finished(results.reload.messages);
results.errors = errors;
process.stdout.write(JSON.stringify(results));
