"""The round-trip rules of the fidelity matrix, in one place.

A cell (writer x reader) passes when what the reader gives back equals what the
writer sent (tests/fidelity/conversation.py), less exactly the facts the rules below
take away. Each rule is named and says why; a rule names its writers and readers
(None: all of them). Nothing else may differ: the dialogue comes back in order,
every text, call (name and arguments), result and image equal.

Normalisations every reader may make (applied while reading, tests/fidelity/readers.py):
- `coalesced-chunks`: text streamed in chunks of one message comes back as one text
  (ACP's `agent_message_chunk`s, an SDK's streamed deltas).
- `ids-by-pairing`: a tool call's id is not compared: a result is compared in its
  place after its call, so a reused id that keeps its own result reads back equal
  whether the reader hands it back renamed (`call-1~2`, `call-1_2`) or as stored.
- `arguments-as-json`: arguments are compared as JSON values, not as strings.
- `image-by-reference`: an image is its URL, or `sha256:<hex>` of its bytes, which
  is the reference convlog keeps of inline image data (the bytes themselves go to
  no store of convlog's).
- `results-as-returned`: a tool result wrapped by its SDK is compared as the tool
  returned it: ADK hands a function's plain return value to the model as
  `{"result": value}` and stores it so (`result_value`).
- `where-a-repair-goes`: a lost result's repair answers its call; a reader may put it
  right after the call (a model's input: the contexts, the spans) or where the turn
  ends (ACP's replay and the agent's view: after what the agent said meanwhile), so
  it is compared right after its call (`repairs_after_calls`).
- `otel-grace-0`: the OTel export runs with `--grace 0`, so the last turn (its call
  waiting for a result that never comes) goes out without waiting for time to pass;
  a writer that writes a turn in many transactions (ADK: an event each) runs on the
  test's clock, so no gap between its transactions passes that grace.
- `usage-per-response`: usage is compared as input/output tokens of each model
  response; a reader that adds a turn's usage up gives the same figures here, since
  each turn has one response with usage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.fidelity.conversation import USAGE, Fact, Facts


def result_value(text: str) -> str:
    """`results-as-returned`: ADK's `{"result": "..."}` is the text it wraps; a result
    that is a JSON object or array is compared as JSON (`arguments-as-json`)."""
    if not text.startswith(("{", "[")):
        return text
    try:
        found = json.loads(text)
    except ValueError:
        return text
    if isinstance(found, dict) and list(found) == ["result"] and isinstance(
            found["result"], str):
        return str(found["result"])
    return json.dumps(found, sort_keys=True, separators=(",", ":"))


def repairs_after_calls(dialogue: list[Fact]) -> list[Fact]:
    """`where-a-repair-goes`: each lost result right after the newest call of its tool
    that has no result yet."""
    out: list[Fact] = []
    for fact in dialogue:
        if fact.kind != "lost":
            out.append(fact)
            continue
        at = len(out)
        for i in range(len(out) - 1, -1, -1):
            if out[i].kind == "call" and out[i].value.split(" ", 1)[0] == fact.value and (
                    i + 1 == len(out) or out[i + 1].kind not in ("result", "lost")):
                at = i + 1
                break
        out.insert(at, fact)
    return out


CONTEXTS = frozenset({"context-xml", "context-markdown", "context-messages"})
HAPPENED = frozenset({"transcript", "view-user"})
IMPORTERS = frozenset({"import-claude-code", "import-openai", "import-codex"})
MESSAGES_READ = IMPORTERS | {"library", "http", "watch"}
"""Writers whose own read is the log's messages (`messages()`, `GET .../messages`)."""


@dataclass(frozen=True)
class Rule:
    """Facts of `kinds` that do not come back from `readers` when `writers` wrote."""

    name: str
    why: str
    kinds: frozenset[str]
    writers: frozenset[str] | None = None
    readers: frozenset[str] | None = None
    values: frozenset[str] | None = None
    """Only the facts of these values (None: every fact of `kinds`)."""

    def takes(self, fact: Fact) -> bool:
        return fact.kind in self.kinds and (self.values is None or fact.value in self.values)

    def applies(self, writer: str, reader: str) -> bool:
        return ((self.writers is None or writer in self.writers)
                and (self.readers is None or reader in self.readers))


def rule(name: str, why: str, kinds: set[str], writers: set[str] | frozenset[str] | None = None,
         readers: set[str] | frozenset[str] | None = None, values: set[str] | None = None
         ) -> Rule:
    return Rule(name, why, frozenset(kinds), None if writers is None else frozenset(writers),
                None if readers is None else frozenset(readers),
                None if values is None else frozenset(values))


# ---------------------------------------------------------------- per reader

READER_RULES = [
    rule("history-is-dialogue",
         "the injected history is what was said and done; the title is the catalog's, "
         "usage the costs', and the system prompt goes before the history, from the host",
         {"title", "usage", "system"}, readers=CONTEXTS),
    rule("what-happened-has-no-repair",
         "the transcript and the user's view show what happened: a lost result is a call "
         "with no result there; the repair is what a model is handed (contexts, the "
         "agent's view, the stores' reads)",
         {"lost"}, readers=HAPPENED),
    rule("views-are-dialogue",
         "the transcript and the replay views are the conversation's lines; the title "
         "and usage are the catalog's and the costs'",
         {"title", "usage"}, readers=HAPPENED | {"view-agent"}),
    rule("the-user-never-saw-the-preamble",
         "a system prompt is for the model: the transcript and the user's view leave it out",
         {"system"}, readers=HAPPENED),
    rule("load-replays-no-preamble",
         "ACP's `session/load` replays each prompt without the host's preamble: the "
         "host sent it and keeps it; the agent's view and the page show it",
         {"system"}, writers={"acp"}, readers={"native"}),
    rule("acp-usage-is-the-context-window",
         "ACP's `usage_update` is the context window's fill (`used` of `size`), no "
         "response's token usage: it is kept as it came (context_window_reported, or "
         "with its turn) and `session/load` replays it; the other readers show tokens "
         "per response, which an ACP agent does not report",
         {"usage"}, writers={"acp"},
         readers=CONTEXTS | HAPPENED | {"view-agent", "otel", "html"}),
    rule("spans-have-no-title",
         "the GenAI conventions have no conversation title",
         {"title"}, readers={"otel"}),
]

# ---------------------------------------------------------------- per writer

WRITER_RULES = [
    rule("system-prompts-are-not-stored",
         "the library and HTTP refuse a system message (SystemMessageRejected): the host "
         "keeps its system prompt and passes it to the model itself",
         {"system"}, writers={"library", "http"}),
    rule("messages-are-what-was-recorded",
         "the log's own read (`messages()`, `GET .../messages`) gives the messages as "
         "recorded: a lost result is no message; the contexts and the stores' reads "
         "repair it",
         {"lost"}, writers=MESSAGES_READ, readers={"native"}),
    rule("claude-code-transcripts-have-no-system-prompt",
         "Claude Code keeps its system prompt in the CLI: its transcript has no entry "
         "for it, so neither the importer, `convlog watch` nor the Claude Agent SDK's "
         "store (given the transcript's entries) can carry one",
         {"system"}, writers={"import-claude-code", "watch", "claude-agent-sdk"}),
    rule("instructions-are-not-session-items",
         "the OpenAI Agents SDK and ADK send an agent's instructions to the model from "
         "the agent's definition on every run; neither hands them to its session store",
         {"system"}, writers={"openai-agents", "google-adk"}),
    rule("sdk-sessions-have-no-title",
         "the OpenAI Agents `Session` protocol and ADK's sessions have no title",
         {"title"}, writers={"openai-agents", "google-adk"}),
    rule("items-carry-no-usage",
         "a Responses input item has no usage: `get_items` hands back the items; the "
         "run's usage (from the Runner's context) is on the log's messages, for costs, "
         "spans and the page",
         {"usage"}, writers={"openai-agents"}, readers={"native"}),
    rule("imported-system-prompts-are-skipped",
         "an OpenAI document's system message and a Codex rollout's instructions are "
         "skipped and counted by the importer (convlog.importers.responses: convlog "
         "stores no system prompt it did not see sent as a preamble)",
         {"system"}, writers={"import-openai", "import-codex"}),
    rule("one-usage-per-document",
         "a Chat Completions document has one `usage`, the last response's, put on its "
         "last assistant message: the earlier responses' usage is not in the file",
         {"usage"}, writers={"import-openai"}, values={f"{USAGE[0][0]}/{USAGE[0][1]}"}),
    rule("codex-rollouts-have-no-title",
         "a Codex rollout names no title (the CLI shows the first prompt)",
         {"title"}, writers={"import-codex"}),
]

RULES = READER_RULES + WRITER_RULES


def names() -> list[str]:
    return [r.name for r in RULES]


def expected(writer: str, reader: str, sent: Facts) -> tuple[Facts, list[str]]:
    """What `reader` must give back of what `writer` sent, and the rules applied."""
    applied = [r for r in RULES if r.applies(writer, reader)]
    def kept(facts: list[Fact]) -> list[Fact]:
        return [f for f in facts if not any(r.takes(f) for r in applied)]

    return Facts(kept(sent.dialogue), kept(sent.meta)), [r.name for r in applied]
