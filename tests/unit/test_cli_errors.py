"""Every CLI failure is one clear line on stderr and a non-zero exit (``-v`` adds the traceback); configuration
named by the environment must exist; bus URL parameters are validated; credentials never appear in print."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from stack_support import free_port
from typer.testing import CliRunner

from bus_schemas.examples import build_examples
from infra.blobs.errors import BlobStoreError
from infra.bootstrap import UnsupportedURL, open_bus, open_registry
from infra.bus.errors import BusWriteError
from infra.bus.records import OutgoingRecord
from infra.cli.errors import mask_logs, one_line
from infra.cli.main import app
from infra.config import ConfigError, Settings, mask_credentials
from infra.events import ensure_topics, publish
from infra.registry.port import RegistryUnavailable, VersionNotFound

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs in an empty directory with no FLYWHEEL_* settings from the caller."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("FLYWHEEL_")]:
        monkeypatch.delenv(name)


def _fails(*args: str, env: dict[str, str] | None = None, code: int = 1) -> str:
    """Run ``flywheel ARGS``; assert it failed with ``code`` on exactly one stderr line without a traceback."""
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flywheel: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# -- one clear line per failure -----------------------------------------------------------------------


def test_an_unknown_url_scheme_is_one_line_naming_it_and_the_supported_ones() -> None:
    line = _fails("status", "--bus", "amqp://broker")
    assert "amqp://broker" in line and "kafka://" in line and "--bus" in line


def test_a_closed_port_is_one_line_naming_the_url() -> None:
    url = f"kafka://127.0.0.1:{free_port()}"
    line = _fails("status", "--bus", url, env={"FLYWHEEL_CONNECT_TIMEOUT_S": "1"})
    assert url in line and "flywheel stack up" in line


def test_a_file_that_is_not_a_bus_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    assert "not a database" in _fails("status", "--bus", f"sqlite:///{tmp_path}/notes.txt")


def test_the_verbose_flag_adds_the_traceback() -> None:
    result = CliRunner().invoke(app, ["-v", "status", "--bus", "amqp://broker"])
    assert result.exit_code == 1 and "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("flywheel: error: ")


@pytest.mark.parametrize(
    ("content", "problem"),
    [('bus = ["unclosed"\n', "is not valid TOML"), ('connect_timeout_s = "soon"\n', "connect_timeout_s")],
)
def test_a_malformed_or_mistyped_config_file_is_one_line_naming_it(tmp_path: Path, content: str, problem: str) -> None:
    (tmp_path / "flywheel.toml").write_text(content)
    line = _fails("status")
    assert problem in line and "flywheel.toml" in line


def test_a_config_file_named_by_the_environment_must_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLYWHEEL_CONFIG", "/nowhere/flywheel.toml")
    line = _fails("status")
    assert "FLYWHEEL_CONFIG" in line and "/nowhere/flywheel.toml" in line
    with pytest.raises(ConfigError):
        Settings()  # outside the CLI too: silently ignoring it would run against the wrong adapters


@pytest.mark.parametrize(
    ("config", "problem"),
    [('{"rounds": 2', "Invalid JSON"), ('{"rounds": "many"}', "rounds"), ('{"algorithm": "bogus"}', "algorithm")],
)
def test_a_bad_run_config_file_is_one_line_naming_it(tmp_path: Path, config: str, problem: str) -> None:
    (tmp_path / "loop.json").write_text(config)
    line = _fails("run", "--config", str(tmp_path / "loop.json"))
    assert problem in line and "loop.json" in line


def test_a_bogus_algorithm_flag_is_one_line() -> None:
    assert "algorithm" in _fails("run", "--algorithm", "bogus")


def test_replay_of_an_empty_log_is_one_line(tmp_path: Path) -> None:
    line = _fails("replay", "--verify", "--bus", f"sqlite:///{tmp_path}/empty.db", "--blobs", f"file:///{tmp_path}/b")
    assert "is empty" in line and "--bus" in line


def test_a_full_bus_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    request = build_examples()["ReviewRequested"].model_copy(update={"episode_id": "ep-1"})
    publish(bus, request)  # a pending review, so `review approve` gets as far as writing its decision
    bus.close()
    size = (tmp_path / "bus.db").stat().st_size
    line = _fails(
        "review",
        "approve",
        "ep-1",
        "--reviewer",
        "ana",
        "--note",
        "n" * 9000,  # needs pages the quota denies
        "--bus",
        f"sqlite:///{tmp_path}/bus.db?max_bytes={size}",
        "--blobs",
        f"file:///{tmp_path}/blobs",
    )
    assert "full" in line and "max_bytes" in line


def test_an_out_of_range_port_is_a_usage_error_not_a_traceback() -> None:
    result = CliRunner().invoke(app, ["serve", "harness", "--port", "99999"], env={"FLYWHEEL_HARNESS_TOKEN": "t"})
    assert result.exit_code == 2 and "65535" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (VersionNotFound("'planner/999' does not resolve in sqlite:///m.db"), "registered versions"),
        (BusWriteError("write to the embedded bus failed: database or disk is full"), "quota"),
        (BlobStoreError("cannot write blob to the blob directory file:///ro"), "blob store"),
        (FileNotFoundError(2, "No such file or directory", "/data/x.json"), "/data/x.json"),
    ],
)
def test_each_kind_of_failure_says_what_to_do(error: Exception, says: str) -> None:
    line = one_line(error)
    assert says in line and "\n" not in line


# -- bus URL parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "partitions=0",
        "partitions=-1",
        "partitions=lots",
        "session_timeout_s=0",
        "max_bytes=0",
        "partition=3",
        "namespace=a/b",
    ],
)
def test_invalid_bus_url_parameters_are_refused_up_front(tmp_path: Path, query: str) -> None:
    with pytest.raises(UnsupportedURL, match="invalid parameters"):
        open_bus(f"sqlite:///{tmp_path}/bus.db?{query}")
    assert not (tmp_path / "bus.db").exists()
    assert "invalid parameters" in _fails("status", "--bus", f"sqlite:///{tmp_path}/bus.db?{query}")


# -- credentials ---------------------------------------------------------------------------------------


def test_credentials_in_urls_are_masked_in_text() -> None:
    text = "registry http://ana:hunter2@mlflow:5000/x and https://tok3n@h and kafka://127.0.0.1:19092"
    assert (
        mask_credentials(text) == "registry http://ana:***@mlflow:5000/x and https://***@h and kafka://127.0.0.1:19092"
    )


def test_a_registry_url_with_credentials_is_masked_in_its_errors_and_url() -> None:
    url = f"http://ana:hunter2@127.0.0.1:{free_port()}"
    with pytest.raises(RegistryUnavailable) as caught:
        open_registry(url, Settings(connect_timeout_s=1))
    assert "hunter2" not in str(caught.value) and "ana:***@" in str(caught.value)
    line = _fails("replay", "--registry", url, "--bus", "amqp://ana:hunter2@x")
    assert "hunter2" not in line


def test_log_lines_mask_credentials(caplog: pytest.LogCaptureFixture) -> None:
    mask_logs()
    with caplog.at_level(logging.INFO):
        logging.getLogger("flywheel.test").info("opening %s", "http://ana:hunter2@mlflow:5000")
    assert "hunter2" not in caplog.text and "ana:***@mlflow" in caplog.text


def test_status_survives_a_garbage_record_on_the_dead_letter_topic(tmp_path: Path) -> None:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    bus.publish(OutgoingRecord("dead-letters", b"{not json", key=b"k"))
    bus.close()
    result = CliRunner().invoke(app, ["status", "--bus", f"sqlite:///{tmp_path}/bus.db"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output


def test_a_run_report_shows_urls_with_credentials_masked(tmp_path: Path) -> None:
    from infra.report import build_report, write_report

    report = build_report("run-1", [])
    report.settings.update({"registry": "http://ana:hunter2@mlflow:5000", "bus": "kafka://127.0.0.1:19092"})
    html = write_report(report, tmp_path / "run-1")
    written = html.read_text() + (tmp_path / "run-1" / "report.json").read_text()
    assert "hunter2" not in written and "ana:***@mlflow" in written and "kafka://127.0.0.1:19092" in written
