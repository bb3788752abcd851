"""Reading a Slack export's files: a directory, or a zip checked against :class:`ZipLimits`.

:class:`ExportTree` finds the export's root (where ``channels.json`` or ``users.json`` is,
also inside one wrapping folder) and streams a member's top-level JSON array; inside a zip,
the bytes each member inflates to are counted so a zip bomb is refused before or while it
is read (:class:`~omoide.importers.ExportTooLarge`).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from omoide.importers import _jsonstream
from omoide.importers._errors import ExportTooLarge, UnrecognizedExport
from omoide.importers._jsonstream import JSONError, checked, decode_whole, error_line, iter_array, worth_whole

DEFAULT_MAX_UNCOMPRESSED_BYTES = 1024**3
"""Default cap on the JSON a Slack zip may inflate to, in total (1 GiB)."""
DEFAULT_MAX_COMPRESSION_RATIO = 100.0
"""Default cap on one zip member's compression ratio (uncompressed : compressed)."""
RATIO_GRACE_BYTES = 1024**2
"""Members inflating to at most this many bytes are exempt from the ratio cap (tiny files compress well)."""


@dataclass(frozen=True, slots=True)
class ZipLimits:
    """How far a Slack export zip may inflate (settings ``import_max_uncompressed_bytes`` and
    ``import_max_compression_ratio``). A zip beyond either limit raises
    :class:`~omoide.importers.ExportTooLarge` before anything is imported.

    Attributes:
        max_uncompressed_bytes: the JSON members together, uncompressed.
        max_ratio: one member's uncompressed size / compressed size (members of at most
            :data:`RATIO_GRACE_BYTES` are exempt), and the same for the JSON members
            together (plus that grace once).
    """

    max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES
    max_ratio: float = DEFAULT_MAX_COMPRESSION_RATIO


_MARKERS = ("channels.json", "users.json", "org_users.json")


class ExportTree:
    """The files of an export, relative to its root (where ``channels.json`` is)."""

    def __init__(self, path: Path, limits: ZipLimits) -> None:
        self.path = path
        self.limits = limits
        self.inflated = 0  # bytes read out of the zip so far
        self.compressed = 0  # compressed size of its JSON members
        self._zip: zipfile.ZipFile | None = None
        if path.is_dir():
            names = [p.relative_to(path).as_posix() for p in path.rglob("*.json") if p.is_file()]
        elif zipfile.is_zipfile(path):
            try:
                self._zip = zipfile.ZipFile(path)
                infos = [
                    i
                    for i in self._zip.infolist()
                    if i.filename.endswith(".json") and not i.filename.startswith("__MACOSX/")
                ]
                self._check_declared(infos)
            except (zipfile.BadZipFile, OSError) as exc:
                self.close()
                raise UnrecognizedExport(f"cannot read the zip archive {path}: {exc}", path=str(path)) from exc
            except ExportTooLarge:
                self.close()
                raise
            names = [i.filename for i in infos]
        else:
            raise UnrecognizedExport(
                f"not a Slack export: {path} is neither a directory nor a zip archive", path=str(path)
            )
        markers = sorted((n for n in names if PurePosixPath(n).name in _MARKERS), key=lambda n: (n.count("/"), n))
        if not markers:
            self.close()
            raise UnrecognizedExport(f"not a Slack export: {path} has no channels.json or users.json", path=str(path))
        parent = PurePosixPath(markers[0]).parent
        self.prefix = "" if str(parent) == "." else f"{parent}/"
        self.names = sorted(n[len(self.prefix) :] for n in names if n.startswith(self.prefix))

    def label(self, name: str) -> str:
        """How ``name`` is shown in problems: a path, or ``archive.zip!member``."""
        if self._zip is not None:
            return f"{self.path}!{self.prefix}{name}"
        return str(self.path / self.prefix / name)

    def _check_declared(self, infos: list[zipfile.ZipInfo]) -> None:
        """Refuse a zip whose directory already says it inflates too far (zipfile never reads
        past a member's declared size; :class:`_Member` checks the bytes actually read).

        The ratio applies to each member over :data:`RATIO_GRACE_BYTES` and to the JSON
        members together (many small, highly compressed members are a bomb too)."""
        limits = self.limits
        for info in infos:
            if info.file_size > RATIO_GRACE_BYTES and info.file_size > limits.max_ratio * max(info.compress_size, 1):
                raise self._too_compressed(info.filename, info.file_size, info.compress_size)
        total = sum(i.file_size for i in infos)
        self.compressed = sum(i.compress_size for i in infos)
        if total > self._ratio_allowance():
            raise self._too_compressed(None, total, self.compressed)
        if total > limits.max_uncompressed_bytes:
            raise self._too_large(total)

    def _ratio_allowance(self) -> float:
        """The most the JSON members together may inflate to under the ratio limit."""
        return self.limits.max_ratio * self.compressed + RATIO_GRACE_BYTES

    def _too_large(self, size: int) -> ExportTooLarge:
        limit = self.limits.max_uncompressed_bytes
        return ExportTooLarge(
            f"{self.path} inflates to more than {limit:,} bytes of JSON ({size:,} bytes or more), the limit set by "
            "OMOIDE_IMPORT_MAX_UNCOMPRESSED_BYTES; nothing was imported (split the export, or raise the limit "
            "if you trust it)",
            path=str(self.path),
            limit="import_max_uncompressed_bytes",
        )

    def _too_compressed(self, member: str | None, size: int, compressed: int) -> ExportTooLarge:
        ratio = size / max(compressed, 1)
        where = f"{self.path}!{member}" if member is not None else f"{self.path} (its JSON files together)"
        return ExportTooLarge(
            f"{where} is compressed {ratio:,.0f} to 1, more than the {self.limits.max_ratio:g} to 1 "
            "allowed by OMOIDE_IMPORT_MAX_COMPRESSION_RATIO (a zip bomb?); nothing was imported",
            path=f"{self.path}!{member}" if member is not None else str(self.path),
            limit="import_max_compression_ratio",
        )

    def read_array(self, name: str) -> list[Any]:
        """The items of one member's top-level JSON array, streamed; an item nested too deeply
        is a :class:`Rejected`.

        Raises:
            OSError, KeyError, zipfile.BadZipFile, NotImplementedError, RuntimeError: unreadable.
            JSONError: invalid JSON.
            NotAnArray: the member is not a JSON array.
            ExportTooLarge: the zip inflates beyond the limits.
        """
        try:
            with self._member(name) as source:
                return list(iter_array(source))
        except JSONError as exc:
            # valid JSON yajl refuses (an integer beyond 64 bits) is decoded whole, as the Discord
            # reader does — only that error, and only a day file of at most WHOLE_MAX_BYTES,
            # so invalid or huge hostile files still cost what streaming costs. The member's bytes
            # count against the zip limits once more.
            if not worth_whole(exc):
                raise
            data = bytearray()
            with self._member(name) as source:
                while chunk := source.read(1 << 20):
                    data += chunk
                    if len(data) > _jsonstream.WHOLE_MAX_BYTES:
                        raise exc from None
            document = decode_whole(bytes(data))
            if not isinstance(document, list):
                raise exc from None
            return [checked(item) for item in document]

    def _member(self, name: str) -> _Member:
        if self._zip is not None:
            info = self._zip.getinfo(self.prefix + name)
            return _Member(self._zip.open(info), self, info)
        return _Member((self.path / self.prefix / name).open("rb"), None, None)

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


class _Member:
    """One member being read: a UTF-8 byte-order mark skipped and, inside a zip, the bytes it
    inflates to counted against the tree's limits."""

    def __init__(self, raw: IO[bytes], tree: ExportTree | None, info: zipfile.ZipInfo | None) -> None:
        self._raw = raw
        self._tree = tree
        self._info = info
        self._read = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size if size >= 0 else 64 * 1024)
        first = self._read == 0
        self._read += len(data)
        tree, info = self._tree, self._info
        if tree is not None and info is not None:
            tree.inflated += len(data)
            if tree.inflated > tree.limits.max_uncompressed_bytes:
                raise tree._too_large(tree.inflated)
            if tree.inflated > tree._ratio_allowance():
                raise tree._too_compressed(None, tree.inflated, tree.compressed)
            if self._read > RATIO_GRACE_BYTES and self._read > tree.limits.max_ratio * max(info.compress_size, 1):
                raise tree._too_compressed(info.filename, self._read, info.compress_size)
        if first and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return data

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Member:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


READ_ERRORS = (OSError, KeyError, ValueError, JSONError, zipfile.BadZipFile, NotImplementedError, RuntimeError)
"""What reading one member can raise (RuntimeError: an encrypted member); ExportTooLarge is not among them."""


def one_line(exc: BaseException) -> str:
    """An error message on one line (yajl appends a context snippet and an arrow)."""
    return error_line(exc)


__all__ = [
    "DEFAULT_MAX_COMPRESSION_RATIO",
    "DEFAULT_MAX_UNCOMPRESSED_BYTES",
    "RATIO_GRACE_BYTES",
    "READ_ERRORS",
    "ExportTree",
    "ZipLimits",
    "one_line",
]
