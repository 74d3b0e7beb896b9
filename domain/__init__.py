"""convlog.domain: the conversation model. Imports nothing else of convlog.

Storage, projections and the public API live elsewhere. Each module:
    events        the events of a conversation: the stored format (golden files pin it)
    conversation  the Conversation aggregate: small state, a fold over events, and the
                  pure decisions (state, command) -> events
    messages      what a host hands convlog to record, validated on construction;
                  content: its parts, tool calls and token usage; records: the one rule
                  that tells a record (an SDK's bookkeeping entry) from a message
    memory        injected memory blocks: the reserved prefix, the decision, forgery
    retention     how long a conversation is kept, and how large it may grow
    errors        typed errors naming what is wrong and where
    clock         THE clock (wall time that stamps and expires, elapsed time for latencies)
    numbers       THE reading of a whole number from text
    renamed       old public names, served with a deprecation warning
"""
