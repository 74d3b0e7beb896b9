"""Encryption at rest: keys, the payload cipher, the per-user key ring, redaction.

Lives here: the master key's loading (`keys`: ``CONVLOG_KEY`` / ``CONVLOG_KEY_FILE``,
never a command-line argument), the AES-GCM payload and key-wrapping formats
(`cipher`, a STORED FORMAT pinned by golden files), the key ring of per-user data
keys wrapped by the master key (`keyring`, over a `KeyTable` that each storage
backend implements in its own database), the secret scrubber (`redaction`) and the
key errors (`errors`).

A core room, not an integration: storage/ encrypts and decrypts with it. May import:
the domain, and other modules of `crypto/`. Never storage/, the services or the
views: the SQL for keys lives with each storage backend, behind `KeyTable`.
"""
