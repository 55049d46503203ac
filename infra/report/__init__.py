"""The round report of a run: numbers derived from the event log, written as JSON, PNG plots and HTML."""

from infra.report.model import RoundRow, RunReport, build_report
from infra.report.write import write_report

__all__ = ["RoundRow", "RunReport", "build_report", "write_report"]
