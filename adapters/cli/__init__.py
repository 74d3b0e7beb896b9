"""The `convlog` command line, an entry point over the application services.

Lives here: every command declared once (`registry`: name, help, arguments, checks,
what runs it), the parser and `main` built from it (`main`, the console script), the
arguments (`arguments`), one function per command (`commands`, or a module of its
own), terminal and JSON output (`render`), and the scripted demo (`demo`, run by
`make demo`).

Also here:
- `acp`, `serve`, `watch`, `otel`, `importing`, `keys`, `pages`, `views`, `retention`,
  `compact`, `copying`: one module per command family (`convlog acp`, `serve`, `watch`,
  `export --otel`, `import`, `keys`/`forget`, `html`/`report`, `replay`/`diff`,
  `retention`/`expire`/`info`, `compact`/`rewind`/`fork`, `copy`).
- `failures`: how a failed command says so (exit status, one line or one JSON document).
- `demo_acp`: `make demo-acp`, the restart story over ACP.

May import: anything of ours. Nothing imports `cli/`, and only `cli/` imports the demo.
`main` builds the application (services.application.bootstrap) and hands each command
its host API or, for a command registered with `run_app`, the application itself;
like every entry point, cli/ never reads `.store` / `.writer` (the dependency test).
"""
