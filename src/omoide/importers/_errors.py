"""Errors of the importers (part of the one hierarchy under :class:`~omoide.errors.InvalidInput`).

::

    InvalidInput
    ├── UnrecognizedExport      the path is not an export of the expected kind, or cannot be read
    └── MalformedExport         a record or file in an export is malformed (strict mode);
                                ``details``: ``path``, ``position``, ``problem``
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


__all__ = ["MalformedExport", "UnrecognizedExport"]
