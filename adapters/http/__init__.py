"""`convlog serve`: the log as an HTTP service, and `convlog.Client`, its Python client.

Hosts that cannot import convlog (TypeScript, Go, Rust, Bun...) and several host
machines sharing one log (on PostgreSQL) talk to it over HTTP + JSON. Lives here:

    schema.py     the wire types (msgspec Structs) of requests and answers
    problems.py   errors as RFC 9457 problem documents naming the field
    auth.py       bearer tokens: the admin token and per-user tokens
    limits.py     ASGI middleware: request size limit, body read timeout
    routes.py     the endpoints (Starlette), each a thin call into the services
    stream.py     server-sent events: a conversation's new events, live
    openapi.py    the OpenAPI 3.1 document, built from the same Structs
    app.py        the application factory; server.py runs it under uvicorn
    client.py     `convlog.Client`: a typed client mirroring the handle API

Needs the `http` extra (`pip install 'convlog[http]'`): Starlette, uvicorn, httpx.

May import: the facade (`import convlog`), the application services
(`convlog.services.*`), the domain and the projections; never storage/ or views/.
"""
