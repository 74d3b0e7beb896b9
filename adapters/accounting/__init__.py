"""Counting and pricing: tokens per message, USD per token.

Lives here: the token counter (`tokens`), the offline vocabulary it is built from
(`vocabulary`), and model prices (`prices`).

Also here:
- `counted`: the counts made on read, kept once per text and tokenizer in this process.

May import: the domain. Nothing else of ours: everything else counts on it.
"""
