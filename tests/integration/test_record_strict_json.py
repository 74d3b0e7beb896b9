"""`convlog record` lines that msgspec accepted silently or explained badly (issue 25):
a UTF-8 byte order mark, a lone surrogate escape, a key given twice. Each is a typed
error naming the line and the field, exit 1, and nothing of the batch is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import convlog

OK = b'{"type":"message","role":"user","content":"fine"}'


@pytest.mark.parametrize(("line", "expected"), [
    (b'\xef\xbb\xbf{"type":"message","role":"user","content":"x"}',
     "stdin:2: the line starts with a UTF-8 byte order mark (BOM)"),
    (b'{"type":"message","role":"user","content":"a\\ud800b"}',
     "stdin:2: field 'content': a \\uXXXX escape is a lone surrogate"),
    (b'{"type":"message","role":"user","content":"\\udc00"}',
     "stdin:2: field 'content': a \\uXXXX escape is a lone surrogate"),
    (b'{"type":"message","role":"user","content":[{"type":"text","text":"\\ud83d"}]}',
     "stdin:2: field 'content[0].text': a \\uXXXX escape is a lone surrogate"),
    (b'{"type":"message","role":"user","content":"mine","content":"yours"}',
     "stdin:2: field 'content': key 'content' is given twice in one object"),
    (b'{"type":"message","role":"assistant","content":"x","usage":{"input_tokens":1,'
     b'"input_tokens":2}}',
     "stdin:2: field 'input_tokens': key 'input_tokens' is given twice in one object"),
])
def test_record_names_line_and_field(line: bytes, expected: str, sqlite_url: str) -> None:
    exe = str(Path(sys.executable).parent / "convlog")
    done = subprocess.run([exe, "record", "c:1", "--db", sqlite_url],
                          input=OK + b"\n" + line + b"\n", capture_output=True, timeout=60)
    err = done.stderr.decode()
    assert done.returncode == 1, done.stdout
    assert err.startswith(f"convlog: error: {expected}"), err
    assert "Traceback" not in err
    with convlog.open(sqlite_url) as log:
        assert log.sql("SELECT count(*) FROM messages")[1] == [(0,)]


def test_a_valid_surrogate_pair_and_equal_keys_in_other_objects_pass(sqlite_url: str
                                                                     ) -> None:
    exe = str(Path(sys.executable).parent / "convlog")
    line = (b'{"type":"message","role":"assistant","content":"\\ud83d\\ude00",'
            b'"tool_calls":[{"id":"a","name":"f","arguments":{"id":1}}]}')
    done = subprocess.run([exe, "record", "c:1", "--db", sqlite_url], input=line + b"\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
