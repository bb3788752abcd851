"""Errors of the importers (part of the one hierarchy under :class:`~omoide.errors.InvalidInput`).

::

    InvalidInput
    ├── UnrecognizedExport      the path is not an export of the expected kind, or cannot be read
    ├── MalformedExport         a record or file in an export is malformed (strict mode);
    │                           ``details``: ``path``, ``position``, ``problem``
    └── ExportTooLarge          an archive would inflate beyond the limits (a zip bomb);
                                ``details``: ``path``, ``limit``
"""

from __future__ import annotations

from omoide.errors import InvalidInput


class UnrecognizedExport(InvalidInput):
    """The path does not exist, cannot be read, or is not an export of the expected format."""

    code = "UNRECOGNIZED_EXPORT"


class MalformedExport(InvalidInput):
    """A malformed record or file in an export; raised on the first one in strict mode.

    ``details`` holds ``path`` (the file, or ``archive.zip!member``), ``position``
    (e.g. ``messages[12]`` or ``line 7``) and ``problem``.
    """

    code = "MALFORMED_EXPORT"


class ExportTooLarge(InvalidInput):
    """An export archive would inflate to more than the configured limits; nothing is imported.

    Raised, whatever ``strict`` says, when a zip's JSON members add up to more than
    ``OMOIDE_IMPORT_MAX_UNCOMPRESSED_BYTES`` or one of them is compressed more than
    ``OMOIDE_IMPORT_MAX_COMPRESSION_RATIO`` to 1. ``details``: ``path`` (the archive, or
    ``archive.zip!member``) and ``limit`` (which setting was exceeded).
    """

    code = "EXPORT_TOO_LARGE"


__all__ = ["ExportTooLarge", "MalformedExport", "UnrecognizedExport"]
