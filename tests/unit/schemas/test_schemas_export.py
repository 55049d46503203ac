"""JSON Schema and AsyncAPI export: valid documents that accept every golden example."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import orjson
import pytest
from typer.testing import CliRunner

from bus_schemas import CURRENT_VERSIONS, EVENT_TYPES, TOPICS
from bus_schemas.examples import golden_path
from bus_schemas.export import ASYNCAPI_FILE, asyncapi_document, event_json_schema, export, schema_file_name
from infra.cli.schemas import app

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("schemas")
    export(directory)
    return directory


def test_export_writes_one_schema_per_event_and_the_asyncapi_document(exported: Path) -> None:
    names = {path.name for path in exported.iterdir()}
    assert names == {schema_file_name(name) for name in EVENT_TYPES} | {ASYNCAPI_FILE}
    assert schema_file_name("EpisodeEnded") == "EpisodeEnded.v2.schema.json"


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_golden_example_validates_against_its_exported_schema(exported: Path, event_type: str) -> None:
    schema = json.loads((exported / schema_file_name(event_type)).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(orjson.loads(golden_path(event_type).read_bytes()))
    wrong_type = {**orjson.loads(golden_path(event_type).read_bytes()), "event_type": "Nope", "unexpected": 1}
    errors = {error.validator for error in validator.iter_errors(wrong_type)}
    assert {"const", "additionalProperties"} <= errors


def test_old_version_golden_does_not_match_the_current_schema() -> None:
    validator = jsonschema.Draft202012Validator(event_json_schema("EpisodeEnded"))
    assert not validator.is_valid(orjson.loads(golden_path("EpisodeEnded", 1).read_bytes()))


def test_asyncapi_document_describes_every_topic_and_event(exported: Path) -> None:
    document = json.loads((exported / ASYNCAPI_FILE).read_text())
    assert document == json.loads(json.dumps(asyncapi_document()))
    assert document["asyncapi"] == "3.0.0"
    assert document["info"]["title"] and document["info"]["version"]
    assert set(document["channels"]) == set(TOPICS)
    messages = document["components"]["messages"]
    assert set(messages) == set(EVENT_TYPES)
    for name, spec in TOPICS.items():
        channel = document["channels"][name]
        assert channel["address"] == name
        assert set(channel["messages"]) == set(spec.event_types)
        assert channel["bindings"]["kafka"]["partitions"] == spec.partitions
        assert channel["bindings"]["kafka"]["topicConfiguration"]["retention.ms"] == spec.retention_ms
    for operation in document["operations"].values():
        assert operation["action"] == "send"
        assert operation["channel"]["$ref"].removeprefix("#/channels/") in TOPICS
    for name, message in messages.items():
        assert message["x-schema-version"] == CURRENT_VERSIONS[name]
        assert message["payload"]["$ref"] == f"#/components/schemas/{name}"


def test_asyncapi_references_all_resolve(exported: Path) -> None:
    document = json.loads((exported / ASYNCAPI_FILE).read_text())
    refs: list[str] = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            refs.extend(value for key, value in node.items() if key == "$ref")
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(document)
    assert refs
    for ref in refs:
        node: object = document
        for part in ref.removeprefix("#/").split("/"):
            assert isinstance(node, dict) and part in node, ref
            node = node[part]


def test_asyncapi_payload_schemas_accept_golden_examples() -> None:
    components = asyncapi_document()["components"]
    for name in EVENT_TYPES:
        schema = {**components["schemas"][name], "components": components}  # so "#/components/..." resolves
        jsonschema.Draft202012Validator(schema).validate(orjson.loads(golden_path(name).read_bytes()))


def test_cli_export_writes_the_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"wrote {len(EVENT_TYPES) + 1} files" in result.output
    assert (tmp_path / "out" / ASYNCAPI_FILE).is_file()
