"""Structured logging (structlog). Only entry points (CLI, services) call :func:`configure_logging`;
the library itself just logs through ``structlog.get_logger(__name__)``."""

from __future__ import annotations

import logging
import sys

import structlog

from omoide.settings import Settings


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is *now* (test runners and REPLs swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(settings: Settings) -> None:
    """Route structlog and stdlib logging to stderr, as console lines or JSON (``OMOIDE_LOG_FORMAT``)."""
    level = logging.getLevelNamesMapping()[settings.log_level]
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(ensure_ascii=False)
        if settings.log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=level, stream=_CurrentStderr(), format="%(levelname)s %(name)s: %(message)s", force=True)


__all__ = ["configure_logging"]
