// A host in TypeScript talking to `convlog serve`: one file, no dependency but `fetch`
// (Node.js >= 18, Bun, Deno, Electron, browsers).
//
//   npx tsc -p examples && node examples/dist/client.js http://127.0.0.1:8765 KEY
//
// It records a turn (retried safely with an Idempotency-Key), reads the newest
// messages, runs the tiered-resume bookkeeping after a "restart", and prints the
// history to inject into the fresh agent session. Types mirror docs/openapi.json.

declare const process: {
  argv: string[];
  env: Record<string, string | undefined>;
  exitCode?: number;
};

export interface Message {
  role: "user" | "assistant" | "tool";
  content: string;
  id?: string;
  model?: string;
  usage?: { input_tokens?: number; output_tokens?: number };
}

export interface AppendResult {
  version: number;
  appended: string[];
  skipped: string[];
  events: number;
}

export interface MessageAppended {
  type: "message_appended";
  message_id: string;
  role: string;
  content: unknown;
  at: string;
}

export interface Context {
  key: string;
  format: string;
  text: string;
  tokens: number;
  message_count: number;
  omitted: number;
}

export interface Injection {
  injected: boolean;
  already_injected: boolean;
  context: Context | null;
}

/** An RFC 9457 problem document: every error the server answers. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  field?: string;
}

export class ConvlogError extends Error {
  constructor(public problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}` +
      (problem.field ? ` (field ${problem.field})` : ""));
  }
}

export class Convlog {
  constructor(private baseUrl: string, private token?: string) {}

  async request<T>(method: string, path: string, body?: unknown,
                   headers: Record<string, string> = {}): Promise<T> {
    const response = await fetch(this.baseUrl + path, {
      method,
      headers: {
        "Content-Type": "application/json",
        ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new ConvlogError(await response.json() as Problem);
    return await response.json() as T;
  }

  conversation(key: string): Conversation {
    return new Conversation(this, key);
  }
}

export class Conversation {
  private path: string;

  constructor(private log: Convlog, public key: string) {
    this.path = `/v1/conversations/${encodeURIComponent(key)}`;
  }

  start(attrs: { user?: string; agent?: string; channel?: string } = {}): Promise<unknown> {
    return this.log.request("POST", "/v1/conversations", { key: this.key, ...attrs });
  }

  appendTurn(messages: Message[], idempotencyKey?: string): Promise<AppendResult> {
    return this.log.request("POST", `${this.path}/turns`, { messages },
      idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {});
  }

  messages(last?: number): Promise<MessageAppended[]> {
    return this.log.request("GET", `${this.path}/messages${last ? `?last=${last}` : ""}`);
  }

  context(tokens = 10_000, format: "xml" | "markdown" | "messages" = "xml"): Promise<Context> {
    return this.log.request("GET", `${this.path}/context?tokens=${tokens}&format=${format}`);
  }

  resumeAttempt(strategy: string, nativeSessionId?: string): Promise<AppendResult> {
    return this.log.request("POST", `${this.path}/resume/attempts`,
      { strategy, native_session_id: nativeSessionId ?? null });
  }

  resumeOutcome(outcome: { strategy: string; ok: boolean; reason?: string; error?: string;
                           native_session_id?: string; latency_ms?: number;
                           fresh?: boolean }): Promise<AppendResult> {
    return this.log.request("POST", `${this.path}/resume/outcomes`, outcome);
  }

  injection(nativeSessionId: string, tokens = 10_000): Promise<Injection> {
    return this.log.request("POST", `${this.path}/resume/injection`,
      { native_session_id: nativeSessionId, budget: { tokens } });
  }
}

async function main(): Promise<void> {
  const [baseUrl = "http://127.0.0.1:8765", key = "ts:example"] = process.argv.slice(2);
  const log = new Convlog(baseUrl, process.env.CONVLOG_TOKEN);
  const conv = log.conversation(key);
  await conv.start({ user: "u1", agent: "copilot", channel: "electron" });

  const turn: Message[] = [
    { role: "user", content: "What did we decide about auth?" },
    { role: "assistant", content: "JWT with rotating keys.", model: "gpt-4o",
      usage: { input_tokens: 812, output_tokens: 9 } },
  ];
  const first = await conv.appendTurn(turn, "turn-1");
  const retry = await conv.appendTurn(turn, "turn-1"); // a network retry: nothing doubles
  console.log(JSON.stringify({ appended: first.appended, retried: retry.appended }));

  const [last] = await conv.messages(1);
  console.log(JSON.stringify({ last: last.message_id, role: last.role }));

  // After a restart: native resume failed, a new empty session worked -> inject history.
  await conv.resumeAttempt("session/resume", "sess-old");
  await conv.resumeOutcome({ strategy: "session/resume", ok: false, reason: "not_found",
                             error: "Session not found", latency_ms: 12 });
  await conv.resumeAttempt("session/new");
  await conv.resumeOutcome({ strategy: "session/new", ok: true, native_session_id: "sess-new",
                             fresh: true, latency_ms: 40 });
  const injection = await conv.injection("sess-new", 2_000);
  const again = await conv.injection("sess-new", 2_000);
  console.log(JSON.stringify({ injected: injection.injected, tokens: injection.context?.tokens,
                               again: again.already_injected }));
  console.log(injection.context?.text ?? "");

  try {
    await conv.appendTurn([{ role: "system" as Message["role"], content: "nope" }]);
  } catch (error) {
    if (!(error instanceof ConvlogError)) throw error;
    console.log(JSON.stringify({ status: error.problem.status, field: error.problem.field }));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
