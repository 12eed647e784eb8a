// Read rxstream's object text stream as the AI SDK's useObject does.
//
// Input (stdin): JSON {"cases": [{"name": ..., "url": ...}, ...]}.
// For each case, a POST to the url (a server on 127.0.0.1) whose body is read piece by
// piece; after each piece the text so far goes through the package's own
// parsePartialJson, and a value that differs from the last one (isDeepEqualData) is a new
// partial object, which is what useObject does with each piece of its text stream.
// Output (stdout): JSON {name: {contentType, partials, final, states}}.
import { isDeepEqualData, parsePartialJson } from "ai";

async function readStdin() {
  let text = "";
  for await (const piece of process.stdin) text += piece;
  return JSON.parse(text);
}

async function readObject(url) {
  const response = await fetch(url, { method: "POST", body: "{}" });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let latest = undefined;
  const partials = [];
  const states = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += value;
    const parsed = await parsePartialJson(text);
    states.push(parsed.state);
    if (parsed.value !== undefined && !isDeepEqualData(latest, parsed.value)) {
      latest = parsed.value;
      partials.push(latest);
    }
  }
  return { contentType: response.headers.get("content-type"), partials, final: latest, states };
}

const { cases } = await readStdin();
const out = {};
for (const { name, url } of cases) out[name] = await readObject(url);
process.stdout.write(JSON.stringify(out));
