/**
 * A TypeScript ACP host, as a desktop (Electron) app drives an agent, for convlog's
 * end-to-end test (tests/e2e/test_typescript_host.py). It starts the agent command
 * it is given (there: `convlog acp -- AGENT`) and speaks ACP v1 to it on stdio with
 * @agentclientprotocol/sdk, the library such hosts use.
 *
 * Like such a host, it sends its system prompt as the first text block of the FIRST
 * prompt of every agent session it opens (new, or loaded after a restart), and opens
 * a stored session with `session/load`, falling back to `session/new` on -32002.
 *
 *   node dist/host.js first  SYSTEM CWD -- COMMAND...   new session; prints its id, then waits to be killed
 *   node dist/host.js reopen SYSTEM CWD ID -- COMMAND... load ID, ask; then an unknown id
 *   node dist/host.js tools  SYSTEM CWD -- COMMAND...   new session, the PROMPTS below; prints
 *                                                       every update of each turn, then waits
 *   node dist/host.js reload SYSTEM CWD ID -- COMMAND... load ID; prints the updates replayed
 *
 * Each result is one JSON line on stdout.
 */
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

type Opened = { sessionId: string; how: "load" | "new"; replayed: string[] };

function connectTo(command: string[]) {
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>,
  );
  return { child, stream };
}

/** What the agent streamed, per session: the replay of a load, the answers. */
const received = new Map<string, acp.SessionUpdate[]>();

function texts(sessionId: string, kind: "user_message_chunk" | "agent_message_chunk"): string[] {
  const out: string[] = [];
  for (const u of received.get(sessionId) ?? []) {
    if ((u.sessionUpdate === "user_message_chunk" || u.sessionUpdate === "agent_message_chunk")
        && u.sessionUpdate === kind && u.content.type === "text") {
      out.push(u.content.text);
    }
  }
  return out;
}

const host = acp
  .client({ name: "convlog-ts-host" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const list = received.get(params.sessionId) ?? [];
    list.push(params.update);
    received.set(params.sessionId, list);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
    outcome: { outcome: "selected", optionId: params.options[0].optionId },
  }));

/** A stored session reopened, as the host does at start-up: load, else a new one. */
async function open(ctx: acp.ClientContext, cwd: string, id: string): Promise<Opened> {
  try {
    await ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd, mcpServers: [] });
    return { sessionId: id, how: "load", replayed: texts(id, "user_message_chunk") };
  } catch (error) {
    if (!(error instanceof acp.RequestError) || error.code !== -32002) throw error;
    console.log(JSON.stringify({ unknown: id, code: error.code }));
    const fresh = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    return { sessionId: fresh.sessionId, how: "new", replayed: [] };
  }
}

async function ask(ctx: acp.ClientContext, sessionId: string, blocks: string[]): Promise<string> {
  const before = texts(sessionId, "agent_message_chunk").length;
  const prompt: acp.ContentBlock[] = blocks.map((text) => ({ type: "text", text }));
  const answer = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt });
  if (answer.stopReason !== "end_turn") throw new Error(`stopped: ${answer.stopReason}`);
  return texts(sessionId, "agent_message_chunk").slice(before).join("");
}

/** The turns of the `tools` phase: a title, a file edit (kind, locations, diff). */
const PROMPTS = ["title: Weather desk", "edit the file, twice", "thanks"];

/** Each prompt's updates, as this host received them live. */
async function turns(ctx: acp.ClientContext, sessionId: string, system: string) {
  const out: acp.SessionUpdate[][] = [];
  for (const [i, text] of PROMPTS.entries()) {
    const before = (received.get(sessionId) ?? []).length;
    const prompt: acp.ContentBlock[] = [{ type: "text", text }];
    if (i === 0) prompt.unshift({ type: "text", text: system }); // the first: the system prompt
    const answer = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt });
    if (answer.stopReason !== "end_turn") throw new Error(`stopped: ${answer.stopReason}`);
    out.push((received.get(sessionId) ?? []).slice(before));
  }
  return out;
}

/** What `session/load` replayed: the updates before those of a first prompt after it
 * ("ping": the agent's first update is its thought about it), which makes sure every
 * replayed update was handled. */
async function reloaded(ctx: acp.ClientContext, cwd: string, sessionId: string,
                        system: string) {
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
  const prompt: acp.ContentBlock[] = [{ type: "text", text: system }, { type: "text", text: "ping" }];
  await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt });
  const all = received.get(sessionId) ?? [];
  const ping = all.findIndex((u) => u.sessionUpdate === "agent_thought_chunk"
    && u.content.type === "text" && u.content.text.includes("ping"));
  return all.slice(0, ping);
}

async function main(): Promise<void> {
  const [phase, system, cwd, ...rest] = process.argv.slice(2);
  const dash = rest.indexOf("--");
  const args = rest.slice(0, dash);
  const { child, stream } = connectTo(rest.slice(dash + 1));
  await host.connectWith(stream, async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
      clientInfo: { name: "convlog-ts-host", version: "1.0.0" },
    });
    if (phase === "tools") {
      const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      const live = await turns(ctx, session.sessionId, system);
      console.log(JSON.stringify({ sessionId: session.sessionId, proxyPid: child.pid, live }));
      await new Promise(() => {}); // a running app, until the test kills it
    }
    if (phase === "reload") {
      console.log(JSON.stringify({ replayed: await reloaded(ctx, cwd, args[0], system) }));
      return;
    }
    if (phase === "first") {
      const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      const answer = await ask(ctx, session.sessionId, [system, "Remember the code word PELICAN"]);
      console.log(JSON.stringify({ sessionId: session.sessionId, proxyPid: child.pid, answer }));
      await new Promise(() => {}); // a running app, until the test kills it
    }
    const again = await open(ctx, cwd, args[0]);
    const answer = await ask(ctx, again.sessionId, [system, "What was the code word?"]);
    console.log(JSON.stringify({ ...again, answer }));
    const other = await open(ctx, cwd, "no-such-session-" + args[0]);
    const hello = await ask(ctx, other.sessionId, [system, "Hello, new session"]);
    console.log(JSON.stringify({ ...other, answer: hello }));
  });
  child.stdin.end(); // the proxy shuts down cleanly when its client goes
  await new Promise((done) => child.once("exit", done));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
