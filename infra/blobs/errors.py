"""Errors of the blob store; each names the store's URL and the blob's hash."""


class BlobStoreError(RuntimeError):
    """Base class of blob store failures."""


class BlobStoreUnavailable(BlobStoreError):
    """The store could not be reached within the configured timeout."""


class BlobNotFound(BlobStoreError, KeyError):
    """No blob with that hash."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class BlobCorrupted(BlobStoreError):
    """The stored bytes no longer hash to their address."""


class InvalidBlobAddress(BlobStoreError, ValueError):
    """A blob address that is not a lower-case sha256 hex digest; never used as a path or key."""
