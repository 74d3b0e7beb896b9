"""convlog.domain: the conversation model. Imports nothing else of convlog.

Events (the stored format), the Conversation aggregate with its pure decisions,
and typed errors. Storage, projections and the public API live elsewhere.
"""
