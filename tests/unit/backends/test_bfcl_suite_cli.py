"""``flywheel suites check bfcl``: the gold policy passes every task, the empty one none, and the times are printed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make install installs it without dependencies)")

from infra.cli.main import app  # noqa: E402

pytestmark = pytest.mark.unit


def test_flywheel_suites_check_bfcl_limit_5() -> None:
    result = CliRunner().invoke(app, ["suites", "check", "bfcl", "--limit", "5"])
    assert result.exit_code == 0, result.output
    assert "bfcl: gold 5/5 pass, empty 0/5 pass" in result.output
    assert "the suite's own loop" in result.output and "ratio" in result.output


def test_an_unknown_suite_is_an_error() -> None:
    result = CliRunner().invoke(app, ["suites", "check", "nope"])
    assert result.exit_code != 0


def test_flywheel_suites_list_names_each_suite_with_its_backend_and_size() -> None:
    result = CliRunner().invoke(app, ["suites", "list"])
    assert result.exit_code == 0, result.output
    assert "bfcl: backend bfcl, 200 tasks" in result.output and "bfcl.long_context: backend bfcl" in result.output
