"""A synchronous host that imports convlog, opens a log and appends pays only for what
it uses: not for asyncio (and the ssl it pulls in), importlib.metadata, or the
urllib/http/email chain behind xml.sax.saxutils, or `cryptography` when its store is
not encrypted. Each of those is megabytes of
resident memory in every host process (measured: `make bench`, peak memory row).
Checked in a new interpreter, since this test process has imported everything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HEAVY = ("asyncio", "ssl", "importlib.metadata", "xml.sax", "urllib.request", "http.client",
         "genai_prices", "duckdb", "cryptography")

SCRIPT = """
import json, sys
import convlog
log = convlog.open(sys.argv[1])
conv = log.conversation("k")
conv.append_turn([convlog.user("hi", id="m1"), convlog.assistant("hello", id="m2")])
assert [m.content for m in conv.messages(last=2)] == ["hi", "hello"]
conv.context()
log.close()
print(json.dumps(sorted(m for m in sys.modules if m in {heavy})))
"""


def run_fresh(script: str, *args: str) -> Any:
    """Run `script` in a new interpreter; what its last line printed, as JSON."""
    done = subprocess.run([sys.executable, "-c", script, *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_synchronous_host_does_not_load_what_it_does_not_use(tmp_path: Path) -> None:
    script = SCRIPT.replace("{heavy}", repr(set(HEAVY)))
    assert run_fresh(script, f"sqlite:///{tmp_path / 'w.db'}") == []


HOST_COUNTS = """
import json, sys, threading
import convlog
log = convlog.open(sys.argv[1], preload_tokenizer=sys.argv[2] == "preload")
conv = log.conversation("k")
conv.append_turn([convlog.user("hi", id="m1", tokens=1),
                  convlog.assistant("hello", id="m2", tokens=1)])
assert [m.token_counter for m in conv.messages(last=2)] == ["host", "host"]
for thread in threading.enumerate():
    if thread.name == "convlog-tokenizer-warm-up":
        thread.join()
log.close()
print(json.dumps("tiktoken._tiktoken" in sys.modules))
"""


@pytest.mark.parametrize(("preload", "loaded"), [(True, True), (False, False)])
def test_a_host_that_counts_itself_can_skip_the_tokenizer(tmp_path: Path, preload: bool,
                                                          loaded: bool) -> None:
    """The vocabulary is most of a host's memory (`make bench`: peak memory). No append
    counts (issue 45), so by default a log never loads it until a count is needed;
    `preload_tokenizer=True` loads it in the background at open."""
    assert run_fresh(HOST_COUNTS, f"sqlite:///{tmp_path / 'h.db'}",
                     "preload" if preload else "no") is loaded


@pytest.mark.parametrize("name", ["AsyncConversationLog", "AsyncConversationHandle",
                                  "__version__"])
def test_the_lazy_names_load_on_first_use(name: str) -> None:
    import convlog

    assert getattr(convlog, name) is not None
    assert name in convlog.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    import convlog

    with pytest.raises(AttributeError, match="no_such_thing"):
        convlog.no_such_thing  # noqa: B018
