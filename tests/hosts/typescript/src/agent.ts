/**
 * A TypeScript ACP agent for convlog's end-to-end tests, on @agentclientprotocol/sdk:
 * it speaks ACP v1 AND the experimental draft v2, through the SDK's
 * `agentProtocolRouter` (a client asking for 2 gets v2, one asking for 1 gets v1),
 * as an agent that follows the SDK's newest API does.
 *
 *   node dist/agent.js
 *
 * Sessions live in memory. A prompt is answered with a tool call (kind, rawInput,
 * locations, then a diff and rawOutput) and text: in v1 before the prompt's answer,
 * in v2 after it (the answer is only the user message's id; the reply streams
 * afterwards and an idle `state_update` ends it).
 */
import { Readable, Writable } from "node:stream";
import * as v1 from "@agentclientprotocol/sdk";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2";

const stream = v2.ndJsonStream(
  Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
);

let sessions = 0;
const said = (prompt: ReadonlyArray<{ type: string; text?: string }>) =>
  prompt.map((b) => (b.type === "text" ? b.text : "")).join(" ");

const agentV1 = v1
  .agent({ name: "ts-agent" })
  .onRequest(v1.methods.agent.initialize, () => ({
    protocolVersion: v1.PROTOCOL_VERSION,
    agentCapabilities: {},
    agentInfo: { name: "ts-agent", version: "1.0.0" },
  }))
  .onRequest(v1.methods.agent.session.new, () => ({ sessionId: `v1-${sessions++}` }))
  .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
    const update = (u: v1.SessionUpdate) =>
      client.notify(v1.methods.client.session.update, { sessionId: params.sessionId, update: u });
    await update({ sessionUpdate: "tool_call", toolCallId: "w1", title: "fetch_weather",
      kind: "fetch", status: "in_progress", rawInput: { city: "Oslo" },
      locations: [{ path: "/srv/weather.json" }] });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "w1", status: "completed",
      rawOutput: { tempC: 21, sky: "clear" },
      content: [{ type: "diff", path: "/srv/a.py", oldText: "x = 1\n", newText: "x = 2\n" }] });
    await update({ sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: `v1 reply to: ${said(params.prompt)}` } });
    return { stopReason: "end_turn" };
  });

const agentV2 = v2
  .agent({ name: "ts-agent" })
  .onRequest(v2.methods.agent.initialize, () => ({
    protocolVersion: 2,
    info: { name: "ts-agent", version: "1.0.0" },
    capabilities: { session: {} },
  }))
  .onRequest(v2.methods.agent.session.new, () => ({ sessionId: `v2-${sessions++}` }))
  .onRequest(v2.methods.agent.session.prompt, ({ params, client }) => {
    const messageId = `u-${Date.now()}`;
    const update = (u: v2.SessionUpdate) =>
      client.notify(v2.methods.client.session.update, { sessionId: params.sessionId, update: u });
    setTimeout(async () => { // the reply streams after the answer, as v2 says
      await update({ sessionUpdate: "state_update", state: "running" });
      await update({ sessionUpdate: "agent_message_chunk", messageId: `a-${messageId}`,
        content: { type: "text", text: `v2 reply to: ${said(params.prompt)}` } });
      await update({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
    }, 50);
    return { messageId };
  });

const routed = v2.agentProtocolRouter().withV1(agentV1).withV2(agentV2).connect(stream);
await routed.closed;
