"""The `convlog` command line, an entry point over the application services.

Lives here: the parser and `main` (`main`, the console script), one function per
command (`commands`), terminal and JSON output (`render`), and the scripted demo
(`demo`, run by `make demo`).

May import: anything of ours. Nothing imports `cli/`, and only `cli/` imports the demo.
"""
