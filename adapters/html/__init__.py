"""HTML: a conversation viewer and a resume-health report, as static pages.

Lives here: what a page shows, as plain data built from the log's public API
(`conversation`, `report`), the Jinja2 rendering with autoescaping and the inlined
assets (`render`), the templates and assets themselves (`templates/`, `assets/`:
our own CSS and JavaScript, and Chart.js, vendored under its MIT licence).

Pages are self-contained: no network, no CDN. User text reaches the page only as
escaped HTML or as JSON in a `<script type="application/json">` block (Jinja2's
`tojson`, which escapes `<`, `>`, `&` and `'`), and the page's own scripts put it in
the document with `textContent`, never `innerHTML`.

Also here:
- `publish`: writing the pages (one file per conversation, a report folder).

May import: the facade (`import convlog`), the application services, the domain and
the projections. Needs `jinja2` (the `convlog[html]` extra).
"""

from convlog.html.publish import write_conversation_page, write_report

__all__ = ["write_conversation_page", "write_report"]
