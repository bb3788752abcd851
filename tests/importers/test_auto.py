"""Format detection and read_export over several exports."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide.importers import UnrecognizedExport, detect_format, read_export
from omoide.transcripts import dump_records, user_record

from .dce import BOB, THREAD, document, message, t, write
from .test_slack import export_files, write_dir, write_zip


def test_detect_format(tmp_path: Path) -> None:
    write(tmp_path / "dce" / "a.json", document([]))
    write_dir(tmp_path / "slack", export_files())
    write_dir(tmp_path / "wrapped" / "inner", export_files())
    write_zip(tmp_path / "s.zip", export_files())
    (tmp_path / "tr").mkdir()
    (tmp_path / "tr" / "s.jsonl").write_text(dump_records([user_record("hi", ts=1.0)]))
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "nothing").mkdir()

    assert detect_format(tmp_path / "dce") == "discord"
    assert detect_format(tmp_path / "dce" / "a.json") == "discord"
    assert detect_format(tmp_path / "slack") == "slack"
    assert detect_format(tmp_path / "wrapped") == "slack"
    assert detect_format(tmp_path / "s.zip") == "slack"
    assert detect_format(tmp_path / "tr") == "omoide"
    assert detect_format(tmp_path / "tr" / "s.jsonl") == "omoide"
    for bad in ("notes.txt", "nothing", "missing"):
        with pytest.raises(UnrecognizedExport):
            detect_format(tmp_path / bad)


def test_read_export_over_several_exports_sorts_and_deduplicates(tmp_path: Path) -> None:
    early = [message(t(3, 1, i), f"m{i}") for i in range(3)]
    late = [message(t(3, 1, i), f"m{i}", BOB) for i in range(2, 5)]  # overlaps m2
    thread = [message(t(3, 2), "in the thread")]
    a = write(tmp_path / "a.json", document(list(reversed(early))))
    b = write(tmp_path / "b.json", document(late))
    c = write(tmp_path / "c.json", document(thread, channel=THREAD))
    broken = tmp_path / "broken.json"
    broken.write_text("{oops", encoding="utf-8")

    export = read_export([a, b, c, broken])

    assert [m.text for m in export.messages] == ["m0", "m1", "m2", "m3", "m4", "in the thread"]
    assert export.messages[2].author_name == "Alice"  # the first copy wins
    assert export.report.duplicates == 1
    assert len(export.channels) == 2
    assert [(p.path, p.position) for p in export.problems] == [(str(broken), "")]
