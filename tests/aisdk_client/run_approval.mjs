// useChat's own logic (the ai package's AbstractChat, as React's useChat runs it) through a
// multi-step run with an approval: the page asks; the answer's steps run two tools and end
// waiting for approval of a third; the page decides (addToolApprovalResponse), and
// sendAutomaticallyWhen (lastAssistantMessageIsCompleteWithApprovalResponses) sends the
// decision back; the run resumes and answers.
//
// Input (stdin): JSON {"api": "http://127.0.0.1:PORT/api/chat", "approved": true|false}.
// Output (stdout): JSON {waiting: <the messages after the first answer>, messages: <after the
// whole run>, status, errors, requests: <how many POSTs the page sent>}.
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { Chat, copy, sleep } from "./chat.mjs";


const { api, approved } = JSON.parse(await new Response(process.stdin).text());
const errors = [];
let requests = 0;
const counting = async (url, init) => {
  requests += 1;
  return fetch(url, init);
};

const chat = new Chat({
  id: "chat-run",
  transport: new DefaultChatTransport({ api, fetch: counting }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (error) => errors.push(`${error.name}: ${error.message}`),
});
await chat.sendMessage({ text: "Weather in Paris, and clear the cache?" });
const waiting = copy(chat.messages);
const asked = chat.messages
  .at(-1)
  .parts.find((part) => part.state === "approval-requested");
if (asked) {
  await chat.addToolApprovalResponse({
    id: asked.approval.id,
    approved,
    reason: approved ? undefined : "not now",
  });
  for (let i = 0; i < 2000 && (requests < 2 || chat.status !== "ready"); i++) await sleep(5);
}
process.stdout.write(
  JSON.stringify({ waiting, messages: copy(chat.messages), status: chat.status, errors, requests }),
);
