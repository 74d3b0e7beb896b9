"""`convlog serve`: the log as an HTTP service, and `convlog.Client`, its Python client.

Hosts that cannot import convlog (TypeScript, Go, Rust, Bun...) and several host
machines sharing one log (on PostgreSQL) talk to it over HTTP + JSON. Lives here:

    schema.py         the wire types (msgspec Structs) of requests and answers
    problems.py       errors as RFC 9457 problem documents naming the field
    auth.py           bearer tokens: the admin token and per-user tokens
    limits.py         ASGI middleware: body size and body time limits, key-safe paths
    idempotency.py    the Idempotency-Key header
    endpoint.py       what endpoints share: declaration, typed query/body, the caller
    conversations.py  one conversation: start, append, read, context, lifecycle
    compaction.py     the history operations: compaction (the plan, the host's summary),
                      rewind, fork
    resume.py         the tiered-resume bookkeeping for hosts that run their tiers
    analytics.py      catalog, costs, telemetry, read-only SQL
    stream.py         server-sent events: a conversation's new events, live
    openapi.py        the OpenAPI 3.1 document, built from the same Structs
    app.py            the Starlette application; server.py runs it under uvicorn
    wire.py           what each client call sends, and how answers and errors decode
    client.py         `convlog.Client`: a typed client mirroring the handle API
    aclient.py        `convlog.AsyncClient`: the same, as coroutines

Needs the `http` extra (`pip install 'convlog[http]'`): Starlette, uvicorn, httpx.

Also here:
- `transport`: the connection layer (uvicorn's httptools protocol, with the limits it
  lacks).
- `guard`: what a web page must not make the server do (outermost ASGI middleware).
- `memory`: the memory endpoints and the context across a user's conversations.
- `retention`: the retention policy of the store and of a conversation, and a run;
  `schedule`: `convlog serve` running it every `--retention-interval`.
- `export`: a conversation in a format its importer reads back.
- `__main__`: `python -m convlog.http` prints the OpenAPI document.

May import: the facade (`import convlog`), the application services
(`convlog.services.*`), the domain and the projections; never storage/ or views/.
The app receives the open log's application (`create_app(app)`, `serve(app)`:
services.application): its host API for the endpoints, its operations for writes on
the event loop and kept request answers; never its `.store` / `.writer`.
"""
