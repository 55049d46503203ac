"""The one place a failed command is reported: one line on stderr (what failed, which URL or file, what to do)
and a non-zero exit; ``flywheel -v ...`` prints the traceback as well. Every line is credential-masked."""

from __future__ import annotations

import logging
import sys
import traceback
from typing import Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup
from typer.exceptions import TyperException

from infra.config import mask_credentials

MAX_LINE_CHARS = 600
EXIT_FAILURE = 1


class CliError(Exception):
    """A failure a command reports itself: ``what`` went wrong and what to ``do`` about it."""

    def __init__(self, what: str, do: str = "") -> None:
        super().__init__(what)
        self.do = do


def _hints() -> list[tuple[tuple[type[BaseException], ...], str]]:
    """(error types, what to do), most specific first; imported lazily so ``flywheel --help`` stays fast."""
    from infra.blobs.errors import BlobStoreError, BlobStoreUnavailable
    from infra.bootstrap import UnsupportedURL
    from infra.bus.errors import BusError, BusUnavailable, BusWriteError
    from infra.config import ConfigError
    from infra.registry.port import RegistryUnavailable, VersionNotFound

    adapters = "check --bus/--blobs/--registry, the FLYWHEEL_* variables or flywheel.toml"
    return [
        ((ConfigError,), ""),
        ((UnsupportedURL,), f"fix the URL ({adapters})"),
        (
            (BusUnavailable, BlobStoreUnavailable, RegistryUnavailable),
            f"is the URL right and its server up (flywheel stack up)? ({adapters})",
        ),
        ((VersionNotFound,), "list the registered versions in MLflow and pass one of them"),
        ((BusWriteError,), "the bus refused the write: free disk space or raise its quota (?max_bytes=N), then rerun"),
        ((BusError,), f"check the bus ({adapters})"),
        ((BlobStoreError,), f"check the blob store ({adapters})"),
        ((ValidationError,), "fix the value (see --help)"),
        ((OSError,), "check the path and its permissions"),
    ]


def _describe(exc: BaseException) -> str:
    """What failed, on one line."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_input=False, include_url=False)
        shown = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or exc.title}: {e['msg']}" for e in errors[:3])
        more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
        return f"invalid {exc.title}: {shown}{more}"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or text}: {exc.filename}"
    return text if isinstance(exc, CliError) else f"{type(exc).__name__}: {text}"


def one_line(exc: BaseException) -> str:
    """``flywheel: error: <what failed>; <what to do>``, masked and at most MAX_LINE_CHARS long."""
    do = exc.do if isinstance(exc, CliError) else ""
    if not do:
        do = (
            next((hint for types, hint in _hints() if isinstance(exc, types)), "")
            if not isinstance(exc, CliError)
            else ""
        )
    what = " ".join(_describe(exc).split())
    line = f"flywheel: error: {what}" + (f"; {do}" if do and do not in what else "")
    line = mask_credentials(line)
    if len(line) > MAX_LINE_CHARS:
        line = line[: MAX_LINE_CHARS - 1] + "…"
    return line


def report(exc: BaseException, *, verbose: bool) -> None:
    if verbose:
        sys.stderr.write(mask_credentials("".join(traceback.format_exception(exc))))
    sys.stderr.write(one_line(exc) + ("" if verbose else " (run with -v for the traceback)") + "\n")
    sys.stderr.flush()


class FlywheelGroup(TyperGroup):
    """The top-level command group: any exception a command raises ends here as one reported line and exit 1.
    Click's own exits (usage errors, --help, typer.Exit) pass through unchanged."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (TyperException, typer.Exit, typer.Abort):  # usage errors, --help, typer.Exit(n): Typer's own
            raise
        except KeyboardInterrupt:
            sys.stderr.write("flywheel: interrupted\n")
            raise typer.Exit(130) from None
        except Exception as exc:  # noqa: BLE001 - the point: every failure is reported the same way
            report(exc, verbose=bool(ctx.meta.get("flywheel.verbose")))
            raise typer.Exit(EXIT_FAILURE) from None


class _MaskingRecordFactory:
    """Log records whose message has credentials in URLs masked, whoever logs them (ours, MLflow, Kafka)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed log call is logging's to report, not ours
            return record
        masked = mask_credentials(message)
        if masked != message:
            record.msg, record.args = masked, None
        return record


def mask_logs() -> None:
    """Install the masking record factory once per process."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _MaskingRecordFactory):
        logging.setLogRecordFactory(_MaskingRecordFactory(current))
