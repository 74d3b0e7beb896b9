// A host in TypeScript talking to `convlog serve`, through a client generated from
// docs/openapi.json: the types come from openapi-typescript (src/schema.d.ts, never
// edited by hand: `npm run generate`), the requests from openapi-fetch. Node.js >= 18,
// Bun, Deno, Electron and browsers all have the `fetch` it needs.
//
//   cd clients/typescript && npm ci && npm run build
//   node dist/client.js http://127.0.0.1:8765 KEY
//
// It records a turn (retried safely with an Idempotency-Key), reads the newest
// messages, runs the tiered-resume bookkeeping after a "restart", and prints the
// history to inject into the fresh agent session.

import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

declare const process: {
  argv: string[];
  env: Record<string, string | undefined>;
  exitCode?: number;
};

type Problem = components["schemas"]["Problem"];
type Message = components["schemas"]["MessageLine"];

export class ConvlogError extends Error {
  constructor(public problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
  }
}

/** The answer's data, or a ConvlogError carrying the RFC 9457 problem document. */
function ok<T>(result: { data?: T; error?: unknown }): T {
  if (result.error !== undefined) throw new ConvlogError(result.error as Problem);
  return result.data as T;
}

export function convlog(baseUrl: string, token?: string) {
  return createClient<paths>({
    baseUrl,
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
}

async function main(): Promise<void> {
  const [baseUrl = "http://127.0.0.1:8765", key = "ts:example"] = process.argv.slice(2);
  const client = convlog(baseUrl, process.env.CONVLOG_TOKEN);
  const path = { key };
  ok(await client.POST("/v1/conversations", {
    body: { key, user: "u1", agent: "copilot", channel: "electron" },
  }));

  const turn: Message[] = [
    { type: "message", role: "user", content: "What did we decide about auth?" },
    { type: "message", role: "assistant", content: "JWT with rotating keys.", model: "gpt-4o",
      usage: { input_tokens: 812, output_tokens: 9 } },
  ];
  const append = () => client.POST("/v1/conversations/{key}/turns", {
    params: { path }, body: { messages: turn }, headers: { "Idempotency-Key": "turn-1" },
  });
  const first = ok(await append());
  const retry = ok(await append()); // a network retry: nothing doubles
  console.log(JSON.stringify({ appended: first.appended, retried: retry.appended }));

  const [last] = ok(await client.GET("/v1/conversations/{key}/messages", {
    params: { path, query: { last: 1 } },
  }));
  console.log(JSON.stringify({ last: last.message_id, role: last.role }));

  // After a restart: native resume failed, a new empty session worked -> inject history.
  const resume = `/v1/conversations/{key}/resume` as const;
  ok(await client.POST(`${resume}/attempts`, {
    params: { path }, body: { strategy: "session/resume", native_session_id: "sess-old" },
  }));
  ok(await client.POST(`${resume}/outcomes`, {
    params: { path }, body: { strategy: "session/resume", ok: false, reason: "not_found",
                              error: "Session not found", latency_ms: 12 },
  }));
  ok(await client.POST(`${resume}/attempts`, { params: { path },
                                              body: { strategy: "session/new" } }));
  ok(await client.POST(`${resume}/outcomes`, {
    params: { path }, body: { strategy: "session/new", ok: true,
                              native_session_id: "sess-new", fresh: true, latency_ms: 40 },
  }));
  const inject = () => client.POST(`${resume}/injection`, {
    params: { path }, body: { native_session_id: "sess-new", budget: { tokens: 2_000 } },
  });
  const injection = ok(await inject());
  const again = ok(await inject());
  console.log(JSON.stringify({ injected: injection.injected, tokens: injection.context?.tokens,
                               again: again.already_injected }));
  console.log(injection.context?.text ?? "");

  try {
    ok(await client.POST("/v1/conversations/{key}/turns", {
      params: { path },
      body: { messages: [{ type: "message", role: "system" as Message["role"],
                           content: "nope" }] },
    }));
  } catch (error) {
    if (!(error instanceof ConvlogError)) throw error;
    console.log(JSON.stringify({ status: error.problem.status, field: error.problem.field }));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
