"""A conversation whose agent forgets, for `convlog replay --view agent` and `convlog diff`.

    python examples/forgetful_agent.py demo.db
    convlog --db demo.db replay support:7 --view agent
    convlog --db demo.db diff support:7

The host runs an agent whose native resume never works (it forgets its sessions on
restart) and whose `session/new` hands out the id "0" in every process, as many
agents do. The first restart falls back to a new session and gets history injected
(cut to a small budget); the second gets the same id "0" back, convlog has already
injected into "0", and the agent starts empty: the README's debugging session.
"""

from __future__ import annotations

import sys

import convlog


def forgetful_agent(url: str, key: str = "support:7") -> None:
    with convlog.open(url) as log:
        conv = log.conversation(key, user="ana", agent="helper", title="Deploy questions")
        conv.bind_native_session("0")
        turns = [
            ("Our deploy key is stored in Vault under ops/deploy.", "Noted: ops/deploy."),
            ("We deploy from the release branch only.", "Understood: release branch only."),
            ("Staging is at staging.example.test.", "Got it."),
        ]
        for asked, answered in turns:
            conv.append_turn([convlog.user(asked, tokens=12),
                              convlog.assistant(answered, tokens=6, model="gpt-4o")])

        def forgot(call: convlog.TierCall) -> str:
            raise convlog.TierFailed("not_found", f"no session {call.native_session_id}")

        tiers = [convlog.Tier("session/resume", forgot),
                 convlog.Tier("session/new", lambda call: "0")]
        conv.resume(tiers, budget=convlog.Budget(tokens=400, messages=4))  # restart 1
        conv.append_turn([convlog.user("Where is the deploy key?", tokens=8),
                          convlog.assistant("In Vault, under ops/deploy.", tokens=9)])
        conv.resume(tiers, budget=convlog.Budget(tokens=400, messages=4))  # restart 2
        conv.append_turn([convlog.user("Which branch do we deploy from?", tokens=9),
                          convlog.assistant("I don't know which branch you use.", tokens=9)])


if __name__ == "__main__":
    forgetful_agent(sys.argv[1] if len(sys.argv) > 1 else "demo.db")
