"""Bad configuration fails fast and clearly: unknown schemes list what is supported, dead servers are named."""

from __future__ import annotations

import pytest
from stack_support import free_port

from infra.blobs.errors import BlobStoreUnavailable
from infra.bootstrap import UnsupportedURL, open_blob_store, open_bus, open_registry
from infra.bus.errors import BusUnavailable
from infra.config import Settings
from infra.registry.port import RegistryUnavailable

pytestmark = pytest.mark.unit


FAST = Settings(connect_timeout_s=2.0)


@pytest.mark.parametrize(
    ("opener", "url", "supported"),
    [
        (open_bus, "amqp://localhost", "kafka://"),
        (open_blob_store, "gs://bucket", "s3://"),
        (open_registry, "ftp://mlflow", "http://"),
    ],
)
def test_unknown_scheme_is_rejected_with_the_supported_list(opener, url, supported):
    with pytest.raises(UnsupportedURL, match=supported) as err:
        opener(url, FAST)
    assert url in str(err.value)


@pytest.mark.timeout(30)
def test_unreachable_broker_names_its_url():
    url = f"kafka://127.0.0.1:{free_port()}"
    with pytest.raises(BusUnavailable, match=url):
        open_bus(url, FAST)


@pytest.mark.timeout(30)
def test_unreachable_s3_names_its_url():
    endpoint = f"127.0.0.1:{free_port()}"
    with pytest.raises(BlobStoreUnavailable, match=endpoint):
        open_blob_store(f"s3://bucket?endpoint={endpoint}", FAST)


@pytest.mark.timeout(30)
def test_unreachable_mlflow_names_its_url():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RegistryUnavailable, match=url):
        open_registry(url, FAST)


def test_s3_url_without_endpoint_is_rejected():
    with pytest.raises(UnsupportedURL, match="endpoint"):
        open_blob_store("s3://bucket", FAST)
