"""Operations on a whole database: backup, restore, export (``omoide backup / restore / export``).

* :func:`backup` — an SQLite file copy (online backup API) or a logical, versioned folder
  that restores into either backend (:mod:`omoide.ops.backup`);
* :func:`restore` — a backup into an empty database, vectors kept or re-computed
  (:mod:`omoide.ops.restore`);
* :func:`export_rows` — one workspace's or one user's data as JSONL rows, for a
  data-subject request (:mod:`omoide.ops.export`).

Example:
    >>> await backup("sqlite:///./data/omoide.db", Path("backups/2026-11-26"))          # doctest: +SKIP
    >>> await restore(Path("backups/2026-11-26"), "postgresql://…/omoide", settings=s)  # doctest: +SKIP
"""

from omoide.ops.backup import BackupReport, backup
from omoide.ops.export import ExportScope, export_rows
from omoide.ops.restore import RestoreReport, restore

__all__ = ["BackupReport", "ExportScope", "RestoreReport", "backup", "export_rows", "restore"]
