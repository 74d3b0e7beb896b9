/**
 * A host that speaks the experimental draft ACP v2 first and v1 when the agent does
 * not speak v2, on @agentclientprotocol/sdk, for convlog's end-to-end test
 * (tests/e2e/test_typescript_host.py): what a host built on the SDK's
 * `experimental/v2` client does in front of `convlog acp -- AGENT`.
 *
 *   node dist/host_v2.js CWD -- COMMAND...
 *
 * 1. It starts COMMAND and initializes with the v2 client (protocol version 2). When
 *    that works, it opens a session, prompts, waits for the idle `state_update` that
 *    ends the v2 turn, prints {"v2": "initialized", "reply": ...} and stops.
 * 2. When the v2 client refuses the agent's answer (an agent that answers version 1:
 *    the SDK's v2 client fails the initialization and closes the connection), it
 *    prints {"v2": "refused", "error": ...}, starts COMMAND again and does the same
 *    turn with the v1 client: {"v1": reply, "sessionId": ...}.
 */
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as v1 from "@agentclientprotocol/sdk";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2";

const [cwd, dash, ...command] = process.argv.slice(2);
if (dash !== "--") throw new Error("usage: host_v2.js CWD -- COMMAND...");

function started() {
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  child.stdin.on("error", () => {}); // the proxy may close first
  const io = [Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>] as const;
  return { child, io };
}

async function stopped(child: ReturnType<typeof started>["child"]): Promise<void> {
  child.stdin.end();
  if (child.exitCode === null) await new Promise((done) => child.once("exit", done));
}

async function withV2(): Promise<boolean> {
  const { child, io } = started();
  let text = "";
  let idle: () => void = () => {};
  const ended = new Promise<void>((done) => { idle = done; });
  const host = v2.client({ name: "convlog-ts-host-v2" })
    .onNotification(v2.methods.client.session.update, ({ params }) => {
      // v2's unions also hold variants this SDK does not know: read the fields
      const u = params.update as { sessionUpdate: string; state?: string;
        content?: { type?: string; text?: string } };
      if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") {
        text += u.content.text ?? "";
      }
      if (u.sessionUpdate === "state_update" && u.state === "idle") idle();
    });
  try {
    await host.connectWith(v2.ndJsonStream(...io), async (ctx) => {
      await ctx.request(v2.methods.agent.initialize, {
        protocolVersion: 2, info: { name: "convlog-ts-host-v2", version: "1.0.0" },
      });
      const session = await ctx.request(v2.methods.agent.session.new, { cwd, mcpServers: [] });
      await ctx.request(v2.methods.agent.session.prompt, {
        sessionId: session.sessionId, prompt: [{ type: "text", text: "hello over v2" }] });
      await ended;
      console.log(JSON.stringify({ v2: "initialized", reply: text, sessionId: session.sessionId }));
    });
    return true;
  } catch (error) {
    console.log(JSON.stringify({ v2: "refused", error: String(error) }));
    return false;
  } finally {
    await stopped(child);
  }
}

async function withV1(): Promise<void> {
  const { child, io } = started();
  let text = "";
  const host = v1.client({ name: "convlog-ts-host-v2" })
    .onNotification(v1.methods.client.session.update, ({ params }) => {
      const u = params.update;
      if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
        text += u.content.text;
      }
    });
  await host.connectWith(v1.ndJsonStream(...io), async (ctx) => {
    const init = await ctx.request(v1.methods.agent.initialize, {
      protocolVersion: v1.PROTOCOL_VERSION, clientCapabilities: {},
      clientInfo: { name: "convlog-ts-host-v2", version: "1.0.0" } });
    const session = await ctx.request(v1.methods.agent.session.new, { cwd, mcpServers: [] });
    await ctx.request(v1.methods.agent.session.prompt, {
      sessionId: session.sessionId, prompt: [{ type: "text", text: "hello over v1" }] });
    console.log(JSON.stringify({ v1: text, sessionId: session.sessionId,
      protocolVersion: init.protocolVersion }));
  });
  await stopped(child);
}

if (!(await withV2())) await withV1();
