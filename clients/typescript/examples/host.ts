// A host in TypeScript talking to `convlog serve` through convlog-client, as a new
// project uses it: `npm install convlog-client` (from `npm pack` of clients/typescript),
// then compile under `tsc --strict` and run:
//
//   node host.js http://127.0.0.1:8765 my-conversation
//
// It starts a conversation with metadata, records a turn of every role (a tool call
// with its input and its result) under an Idempotency-Key and retries it, follows the
// live stream, gets the history to inject, and reads a refusal as a problem document.
// tests/e2e/test_typescript_client.py runs it against a real server.

import { Convlog, ConvlogError, type EventOut, type TurnMessage } from "convlog-client";

declare const process: { argv: string[]; env: Record<string, string | undefined> };

const [baseUrl = "http://127.0.0.1:8765", key = "ts:example"] = process.argv.slice(2);
const log = new Convlog(baseUrl, { token: process.env.CONVLOG_TOKEN });

await log.call("startConversation", {
  body: { key, user: "u1", agent: "copilot", channel: "electron",
          metadata: { client: "my-app", window: 1, tags: ["beta"] } },
});

const turn: TurnMessage[] = [
  { type: "message", role: "user", content: "What's the weather in Paris?" },
  { type: "message", role: "assistant", model: "gpt-4o", usage: { input_tokens: 812, output_tokens: 9 },
    content: [{ type: "tool_use", id: "call-1", name: "weather",
                input: { city: "Paris", units: "metric" } }] },
  { type: "message", role: "tool", content: [{ type: "tool_result", tool_use_id: "call-1",
                              content: "18°C, sunny" }] },
  { type: "message", role: "assistant", content: "18°C and sunny in Paris.", model: "gpt-4o" },
];
// @ts-expect-error "usr" is not a role: the compiler refuses it, as the server would
const typo: TurnMessage = { type: "message", role: "usr", content: "x" };
void typo;

const append = () => log.call("appendTurn", { path: { key }, body: { messages: turn },
                                              idempotencyKey: "turn-1" });
const first = await append();
const retried = await append(); // a network retry: nothing doubles
console.log(JSON.stringify({ appended: first.appended, retried: retried.appended }));

const seen: Array<[number, EventOut["event"]["type"]]> = [];
for await (const { version, event } of log.follow(key)) {
  seen.push([version, event.type]);
  if (version === 5) break; // the start and the four messages
}
console.log(JSON.stringify({ streamed: seen }));

const [last] = await log.call("listMessages", { path: { key }, query: { last: 1 } });
const context = await log.call("getContext", { path: { key }, query: { tokens: 2_000 } });
console.log(JSON.stringify({ last: last?.role, injected: context.text.includes("Paris") }));

try {
  await log.call("appendTurn", { path: { key }, body: { messages: [
    { type: "message", role: "system" as TurnMessage["role"], content: "nope" }] } });
} catch (error) {
  if (!(error instanceof ConvlogError)) throw error;
  console.log(JSON.stringify({ status: error.problem.status, field: error.problem.field }));
}
