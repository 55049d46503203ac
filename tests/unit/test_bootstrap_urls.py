"""Adapter URLs resolve paths the way their standards say: file: per RFC 8089, sqlite: per SQLAlchemy."""

from __future__ import annotations

import pytest

from infra.bootstrap import open_blob_store, open_bus

pytestmark = pytest.mark.unit


def test_file_urls_with_an_empty_authority_are_absolute(tmp_path):
    assert open_blob_store(f"file://{tmp_path}/abs").root == tmp_path / "abs"
    assert open_blob_store(f"file:///{tmp_path}/abs").root == tmp_path / "abs"


def test_file_urls_without_an_authority_are_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = open_blob_store("file:.flywheel/blobs")
    assert str(store.root) == ".flywheel/blobs"
    store.put(b"x")
    assert (tmp_path / ".flywheel" / "blobs").is_dir()


def test_sqlite_urls_follow_sqlalchemy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert str(open_bus("sqlite:///rel/bus.db").path) == "rel/bus.db"
    assert open_bus(f"sqlite:///{tmp_path}/abs.db").path == tmp_path / "abs.db"
