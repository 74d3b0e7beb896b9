"""Key errors: each names the problem and what to do; none leaves anything written."""

from __future__ import annotations

from convlog.domain.errors import ConvlogError


class EncryptionKeyError(ConvlogError):
    """Base of the problems with encryption keys (named so as not to shadow KeyError)."""


class MissingKey(EncryptionKeyError):
    """The store is encrypted and no master key was given."""


class BadKey(EncryptionKeyError, ValueError):
    """The key text is not a key: wrong length (a truncated file), not hex/base64."""


class WrongKey(EncryptionKeyError):
    """A well-formed key that does not open this store (a typo'd, old or other store's key)."""


class NotEncrypted(EncryptionKeyError):
    """A key was given for a store that holds unencrypted events: `convlog keys enable`."""


class UnknownDataKey(EncryptionKeyError):
    """A payload sealed under a data key this store has no record of (a row copied in
    from another store, or a damaged key table)."""
