// convlog-client: a typed client of `convlog serve`, for Node.js >= 18, Bun, Deno,
// Electron and browsers (it needs only `fetch`). Importing it does nothing.
//
//   const log = new Convlog("http://127.0.0.1:8765", { token: process.env.CONVLOG_TOKEN });
//   await log.call("startConversation", { body: { key: "k", metadata: { client: "app" } } });
//   await log.call("appendTurn", { path: { key: "k" }, idempotencyKey: "turn-1",
//     body: { messages: [{ type: "message", role: "user", content: "hi" }] } });
//   for await (const { version, event } of log.follow("k")) { ... }
//
// Every operation of docs/openapi.json is `call(operationId, input)`: what it takes and
// answers comes from src/schema.d.ts (openapi-typescript), where it goes from
// src/routes.ts (scripts/routes.mjs); both are made by `npm run generate`, never by hand.
// An error answer is thrown as a ConvlogError carrying the RFC 9457 problem document.

import { routes } from "./routes.js";
import type { components, operations } from "./schema.js";

export type { components, operations, paths } from "./schema.js";
export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];
/** A message of a turn: a `message` line of `convlog record`. */
export type TurnMessage = Schemas["MessageLine"];
export type EventOut = Schemas["EventOut"];

type Routes = typeof routes;
/** Every operation but the stream (see `follow`). */
export type OperationId = {
  [K in keyof Routes]: Routes[K]["stream"] extends true ? never : K
}[keyof Routes] & keyof operations;

type Parameters<O extends OperationId> = operations[O]["parameters"];
type PathInput<O extends OperationId> =
  Parameters<O> extends { path: infer P } ? { path: P } : { path?: never };
type QueryInput<O extends OperationId> =
  Parameters<O> extends { query?: infer Q } ? [Q] extends [never] ? { query?: never }
    : [Q] extends [undefined] ? { query?: never } : { query?: Q } : { query?: never };
type HeaderInput<O extends OperationId> =
  Parameters<O> extends { header?: { "Idempotency-Key"?: string } }
    ? { /** Sent as the `Idempotency-Key` header: a retry with it is safe. */
        idempotencyKey?: string }
    : { idempotencyKey?: never };
type BodyInput<O extends OperationId> =
  operations[O] extends { requestBody: { content: { "application/json": infer B } } }
    ? { body: B }
    : operations[O] extends { requestBody?: { content: { "application/json": infer B } } }
      ? { body?: B } : { body?: never };

/** What `call(operation, input)` takes: path and query parameters, the body, the
 *  idempotency key where the operation honours one, and an AbortSignal. */
export type Input<O extends OperationId> = PathInput<O> & QueryInput<O> & HeaderInput<O>
  & BodyInput<O> & { signal?: AbortSignal };

/** What the operation answers (its 200 JSON). */
export type Answer<O extends OperationId> =
  operations[O]["responses"] extends { 200: { content: { "application/json": infer A } } }
    ? A : never;

export interface Options {
  /** The bearer token (CONVLOG_TOKEN, or a user's); none on a loopback server without one. */
  token?: string;
  /** Another fetch (a proxy agent, a test double); the global one by default. */
  fetch?: typeof fetch;
}

/** An error answer of the server: `problem` is its RFC 9457 document (`field` names the
 *  offending field of the body or query). */
export class ConvlogError extends Error {
  constructor(public readonly problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.name = "ConvlogError";
  }
}

type Args<O extends OperationId> = object extends Input<O> ? [input?: Input<O>] : [input: Input<O>];

export class Convlog {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(baseUrl: string, options: Options = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** Call one operation of the API by its operationId (`appendTurn`, `getContext`...). */
  async call<O extends OperationId>(operation: O, ...[input]: Args<O>): Promise<Answer<O>> {
    const given = (input ?? {}) as { path?: Record<string, string | number>;
      query?: Record<string, unknown>; body?: unknown; idempotencyKey?: string;
      signal?: AbortSignal };
    const route = routes[operation];
    const headers: Record<string, string> = { Accept: "application/json", ...this.#auth() };
    if (given.body !== undefined) headers["Content-Type"] = "application/json";
    if (given.idempotencyKey !== undefined) headers["Idempotency-Key"] = given.idempotencyKey;
    const response = await this.#fetch(this.#url(route.path, given.path, given.query), {
      method: route.method, headers, signal: given.signal,
      body: given.body === undefined ? undefined : JSON.stringify(given.body),
    });
    if (!response.ok) throw await problemOf(response);
    return (await response.json()) as Answer<O>;
  }

  /** The conversation's events after position `after` (0: from the start), then new ones
   *  as they are recorded, until you stop iterating (or `signal` aborts). The server's
   *  named server-sent events are read with fetch (a token can be sent, unlike with
   *  EventSource), every name alike. */
  async *follow(key: string, options: { after?: number; signal?: AbortSignal } = {}
               ): AsyncGenerator<EventOut, void, undefined> {
    const url = this.#url(routes.followConversation.path, { key },
                          { after: options.after ?? 0 });
    const response = await this.#fetch(url, {
      headers: { Accept: "text/event-stream", ...this.#auth() }, signal: options.signal });
    if (!response.ok || response.body === null) throw await problemOf(response);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = blockEnd(buffer); end; end = blockEnd(buffer)) {
          const data = buffer.slice(0, end.at).split(/\r?\n/)
            .filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).replace(/^ /, "")).join("\n");
          buffer = buffer.slice(end.at + end.length);
          if (data) yield JSON.parse(data) as EventOut;
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  #auth(): Record<string, string> {
    return this.#token ? { Authorization: `Bearer ${this.#token}` } : {};
  }

  #url(template: string, path: Record<string, string | number> | undefined,
       query: Record<string, unknown> | undefined): string {
    const filled = template.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = path?.[name];
      if (value === undefined) throw new TypeError(`missing path parameter ${name}`);
      return encodeURIComponent(String(value));
    });
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (item !== undefined && item !== null) search.append(name, String(item));
      }
    }
    const text = search.toString();
    return `${this.baseUrl}${filled}${text ? `?${text}` : ""}`;
  }
}

function blockEnd(buffer: string): { at: number; length: number } | undefined {
  const found = /\r?\n\r?\n/.exec(buffer);
  return found ? { at: found.index, length: found[0].length } : undefined;
}

async function problemOf(response: Response): Promise<ConvlogError> {
  const text = await response.text();
  try {
    return new ConvlogError(JSON.parse(text) as Problem);
  } catch {
    return new ConvlogError({ type: "about:blank", title: response.statusText,
                              status: response.status, detail: text.slice(0, 200) });
  }
}
