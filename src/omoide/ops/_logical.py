"""The logical backup folder: one gzipped JSONL file per table and a ``manifest.json``.

::

    backup-2026-11-26/
      manifest.json                 format, versions, backend, per table: file, rows, sha256, columns
      sessions.jsonl.gz             one JSON object per row (column → backup value)
      session_messages.jsonl.gz
      …

The folder is written as ``PATH.partial`` and renamed when the manifest is in place, so a
folder with a manifest is complete. A restore checks the format version, every file's
SHA-256 and row count before it writes anything.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import zlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from omoide import __version__
from omoide.errors import ConflictError, InvalidInput, NotFoundError
from omoide.ops._codec import Row, iso
from omoide.ops._pipeline import BATCH_ROWS, SourceInfo
from omoide.ops.tables import BY_NAME, TABLES, Table

FORMAT = "omoide-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
_ROW = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # one encoder for every row
MAX_LINE_CHARS = 256 * 1024 * 1024
"""The longest row a restore reads (a row of omoide's is kilobytes; this bounds what a damaged or
hostile file, one line of a gzip bomb, can make it hold in memory)."""
BATCH_CHARS = 64 * 1024 * 1024
"""A batch is handed on once its rows reach this many characters, before :data:`BATCH_ROWS` rows."""
GZIP_LEVEL = 3  # a backup of a busy bot should not take its CPU; level 3 is ~90 % of level 9's size here


@dataclass(frozen=True, slots=True)
class TableFile:
    """One table of a backup folder (an entry of the manifest)."""

    name: str
    file: str
    rows: int
    sha256: str
    columns: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "rows": self.rows, "sha256": self.sha256, "columns": self.columns}


@dataclass(frozen=True, slots=True)
class Manifest:
    """What ``manifest.json`` says about a backup folder."""

    source: SourceInfo
    tables: tuple[TableFile, ...]
    created_at: str
    omoide_version: str = __version__
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "omoide_version": self.omoide_version,
            "created_at": self.created_at,
            "backend": self.source.backend,
            "schema_version": self.source.schema_version,
            "embeddings": self.source.embeddings,
            "sequences": self.source.sequences,
            "tables": [t.as_dict() for t in self.tables],
        }

    @property
    def rows(self) -> dict[str, int]:
        return {t.name: t.rows for t in self.tables}


def read_manifest(folder: Path) -> Manifest:
    """Read and check a backup folder's manifest.

    Raises:
        NotFoundError: no ``manifest.json`` (not a backup folder, or an unfinished one).
        InvalidInput: not an omoide backup, a newer format, or a malformed manifest.
    """
    path = folder / MANIFEST
    if not path.is_file():
        partial = " (an unfinished backup: it has no manifest)" if folder.name.endswith(".partial") else ""
        raise NotFoundError(f"{folder} is not an omoide backup folder: it has no {MANIFEST}{partial}", path=str(folder))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise InvalidInput(f"{path} is not an omoide backup manifest (a JSON {type(data).__name__}, not an object)")
        if data.get("format") != FORMAT:
            raise InvalidInput(f"{path} is not an omoide backup manifest (format {data.get('format')!r})")
        version = int(data["format_version"])
        if version > FORMAT_VERSION:
            raise InvalidInput(
                f"{folder} is a backup of format {version}, newer than this omoide reads ({FORMAT_VERSION}): "
                f"upgrade omoide (it was made by omoide {data.get('omoide_version')})"
            )
        tables = tuple(
            TableFile(str(t["name"]), str(t["file"]), int(t["rows"]), str(t["sha256"]), tuple(t["columns"]))
            for t in data["tables"]
        )
        source = SourceInfo(
            backend=str(data["backend"]),
            schema_version=int(data["schema_version"]),
            sequences={str(k): int(v) for k, v in dict(data.get("sequences", {})).items()},
            embeddings=bool(data.get("embeddings", True)),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # ValueError: not JSON, not UTF-8
        raise InvalidInput(f"{path} is malformed ({type(exc).__name__}: {exc}); the backup cannot be read") from exc
    for t in tables:
        if Path(t.file).name != t.file or t.file in ("", ".", ".."):
            raise InvalidInput(
                f"{path} names the file {t.file!r} for table {t.name!r}, outside the backup folder: "
                "the manifest was edited; the backup cannot be read"
            )
        spec = BY_NAME.get(t.name)
        unknown = [] if spec is None else [c for c in t.columns if c not in spec.columns]
        if spec is None or unknown:
            what = f"table {t.name!r}" if spec is None else f"column(s) {', '.join(unknown)} of {t.name!r}"
            raise InvalidInput(f"{folder} has {what}, unknown to this omoide: restore it with a newer omoide")
    return Manifest(
        source=source,
        tables=tables,
        created_at=str(data.get("created_at", "")),
        omoide_version=str(data.get("omoide_version", "")),
        format_version=version,
    )


class _HashingWriter(io.RawIOBase):
    """A file that hashes every byte written to it (the gzip stream's output)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self.sha256 = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.sha256.update(view)
        self._fh.write(view)
        return len(view)


class FolderWriter:
    """Writes a backup folder (the sink of ``omoide backup``).

    Args:
        path: the folder to create (must not exist).

    Raises:
        ConflictError: (on enter) ``path`` exists.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = Path(f"{path}.partial")  # beside it; path.with_name() raises for "." and "/"
        self._files: dict[str, TableFile] = {}
        self._open: tuple[str, IO[bytes], _HashingWriter, gzip.GzipFile] | None = None
        self._rows = 0
        self.manifest: Manifest | None = None

    async def __aenter__(self) -> FolderWriter:
        if self.path.exists():
            raise ConflictError(f"{self.path} already exists: choose a new backup path", path=str(self.path))
        shutil.rmtree(self.partial, ignore_errors=True)
        self.partial.mkdir(parents=True)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._close_table()
        if self.partial.exists():
            shutil.rmtree(self.partial, ignore_errors=True)

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return {t.name: t.column_names for t in TABLES}

    def _close_table(self) -> None:
        if self._open is None:
            return
        name, fh, hasher, gz = self._open
        gz.close()
        fh.close()
        file = self._files[name]
        self._files[name] = TableFile(name, file.file, self._rows, hasher.sha256.hexdigest(), file.columns)
        self._open = None

    def _table(self, table: Table, columns: tuple[str, ...]) -> gzip.GzipFile:
        if self._open is not None and self._open[0] == table.name:
            return self._open[3]
        self._close_table()
        file = f"{table.name}.jsonl.gz"
        fh = (self.partial / file).open("wb")
        hasher = _HashingWriter(fh)
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=hasher, compresslevel=GZIP_LEVEL, mtime=0)
        self._open = (table.name, fh, hasher, gz)
        self._rows = 0
        self._files[table.name] = TableFile(table.name, file, 0, "", columns)
        return gz

    async def write(self, table: Table, columns: tuple[str, ...], rows: list[Row]) -> None:
        gz = self._table(table, columns)  # an empty first batch creates the file: the table was there
        if not rows:
            return
        gz.write("".join(_ROW.encode(r) + "\n" for r in rows).encode("utf-8"))
        self._rows += len(rows)

    async def finish(self, info: SourceInfo, counts: Mapping[str, int]) -> None:
        self._close_table()
        manifest = Manifest(
            source=info,
            tables=tuple(self._files[t.name] for t in TABLES if t.name in self._files),
            created_at=iso(datetime.now(UTC)),
        )
        text = json.dumps(manifest.as_dict(), ensure_ascii=False, indent=2) + "\n"
        (self.partial / MANIFEST).write_text(text, encoding="utf-8")
        os.replace(self.partial, self.path)
        self.manifest = manifest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class FolderReader:
    """Rows of a backup folder (the source of ``omoide restore``), checked before use.

    Raises:
        NotFoundError / InvalidInput: (on enter) see :func:`read_manifest`; a file is missing
            or its SHA-256 differs from the manifest's (damaged or edited).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest = read_manifest(path)
        self.info = self.manifest.source
        self._files = {t.name: t for t in self.manifest.tables}

    async def __aenter__(self) -> FolderReader:
        self.verify()
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def verify(self) -> None:
        """Check every file's SHA-256 against the manifest."""
        for entry in self.manifest.tables:
            file = self.path / entry.file
            if not file.is_file():
                raise InvalidInput(f"the backup {self.path} is missing {entry.file} (listed in its manifest)")
            if file_sha256(file) != entry.sha256:
                raise InvalidInput(
                    f"{file} does not match its SHA-256 in the manifest: the backup is damaged; restore another one"
                )

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return {name: entry.columns for name, entry in self._files.items()}

    async def count(self, table: Table) -> int:
        return self._files[table.name].rows

    async def batches(
        self,
        table: Table,
        columns: tuple[str, ...],
        *,
        where: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[list[Row]]:
        entry = self._files[table.name]
        file = self.path / entry.file
        seen = 0
        batch: list[Row] = []
        lines = 0  # read and parsed: an error is on the next one
        try:
            with gzip.open(file, "rt", encoding="utf-8") as fh:
                chars = 0
                while text := fh.readline(MAX_LINE_CHARS + 1):
                    if len(text) > MAX_LINE_CHARS:
                        raise ValueError(f"the row is longer than {MAX_LINE_CHARS} characters")
                    row = json.loads(text)
                    if not isinstance(row, dict):
                        raise ValueError(f"a row must be a JSON object, not {type(row).__name__}")
                    lines += 1
                    batch.append(row)
                    chars += len(text)
                    if len(batch) >= BATCH_ROWS or chars >= BATCH_CHARS:
                        seen += len(batch)
                        yield batch
                        batch = []
                        chars = 0
        except (OSError, EOFError, zlib.error, ValueError) as exc:  # not gzip, cut short, not UTF-8, not JSON
            raise InvalidInput(
                f"{file} cannot be read at line {lines + 1} (table {table.name}): "
                f"{type(exc).__name__}: {exc}. The backup was edited or is damaged; nothing was restored "
                "(the target is left empty). Restore another backup",
                table=table.name,
            ) from exc
        if batch:
            seen += len(batch)
            yield batch
        if seen != entry.rows:
            raise InvalidInput(f"{file} has {seen} rows, its manifest says {entry.rows}")


__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "FolderReader", "FolderWriter", "Manifest", "read_manifest"]
