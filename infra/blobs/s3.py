"""The S3 adapter of the blob store (the ``minio`` client): SeaweedFS locally, any S3 server in production."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, BinaryIO, cast

import urllib3
from minio import Minio
from minio.error import S3Error

from bus_schemas.blob_ref import BlobRef
from infra.blobs.errors import BlobNotFound, BlobStoreError, BlobStoreUnavailable
from infra.blobs.port import CHUNK, ContentAddressedStore, address_of, check_bytes, verified_chunks

_MISSING = {"NoSuchKey", "NoSuchObject", "ResourceNotFound"}


class S3BlobStore(ContentAddressedStore):
    """A :class:`~infra.blobs.port.BlobStore` in one bucket, keys ``sha256/<aa>/<sha256>``."""

    def __init__(
        self,
        endpoint: str,
        bucket: str,
        *,
        access_key: str,
        secret_key: str,
        secure: bool = False,
        region: str = "us-east-1",
        connect_timeout_s: float = 10.0,
        create_bucket: bool = True,
    ) -> None:
        self.bucket = bucket
        self.url = f"s3://{bucket}?endpoint={endpoint}"
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=connect_timeout_s, read=max(30.0, connect_timeout_s)),
            retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=(500, 502, 503, 504)),
        )
        self._http = http
        self._client = Minio(
            endpoint, access_key=access_key, secret_key=secret_key, secure=secure, region=region, http_client=http
        )
        try:
            if not self._client.bucket_exists(bucket):
                if not create_bucket:
                    raise BlobStoreUnavailable(f"bucket {bucket!r} does not exist at {self.url}")
                self._client.make_bucket(bucket)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise BlobStoreUnavailable(f"S3 store at {self.url} is unreachable: {exc}") from exc
        except S3Error as exc:
            raise BlobStoreUnavailable(f"S3 store at {self.url} refused access: {exc.code}: {exc.message}") from exc

    @staticmethod
    def _key(sha: str) -> str:
        return f"sha256/{sha[:2]}/{sha}"

    def close(self) -> None:
        """Close the pooled connections (idempotent)."""
        self._http.clear()

    def _store(self, sha: str, size: int, body: IO[bytes], media_type: str) -> BlobRef:
        try:
            stored: BlobRef | None = self.stat(sha)
        except BlobNotFound:
            stored = None
        if stored is not None and stored.size == size and self.intact(sha):
            return stored  # already there with the right bytes; anything else is overwritten
        try:
            self._client.put_object(
                self.bucket,
                self._key(sha),
                cast(BinaryIO, body),  # minio's annotation; any readable binary file object works
                size,
                content_type=media_type,
                metadata={"sha256": sha},
                part_size=16 * CHUNK,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise BlobStoreUnavailable(f"S3 store at {self.url} is unreachable: {exc}") from exc
        except S3Error as exc:
            raise BlobStoreError(f"S3 store at {self.url} refused blob {sha}: {exc.code}: {exc.message}") from exc
        return BlobRef(sha256=sha, size=size, media_type=media_type)

    def _call(self, sha: str, fn, *args):  # noqa: ANN001, ANN202 - thin error translation
        try:
            return fn(self.bucket, self._key(sha), *args)
        except S3Error as exc:
            if exc.code in _MISSING:
                raise BlobNotFound(f"blob {sha} not found in {self.url}") from None
            raise BlobStoreError(f"S3 store at {self.url} failed on blob {sha}: {exc.code}: {exc.message}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise BlobStoreUnavailable(f"S3 store at {self.url} is unreachable: {exc}") from exc

    def get(self, address: str | BlobRef) -> bytes:
        sha = address_of(address)
        response = self._call(sha, self._client.get_object)
        try:
            return check_bytes(sha, response.read(), self.url)
        finally:
            response.close()
            response.release_conn()

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        sha = address_of(address)
        response = self._call(sha, self._client.get_object)

        def chunks() -> Iterator[bytes]:
            try:
                yield from response.stream(CHUNK)
            finally:
                response.close()
                response.release_conn()

        return verified_chunks(sha, chunks(), self.url)

    def stat(self, address: str | BlobRef) -> BlobRef:
        sha = address_of(address)
        info = self._call(sha, self._client.stat_object)
        return BlobRef(sha256=sha, size=info.size, media_type=info.content_type or "application/octet-stream")

    def exists(self, address: str | BlobRef) -> bool:
        try:
            self.stat(address)
        except BlobNotFound:
            return False
        return True
