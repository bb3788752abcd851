"""The bots' erasure receipt: every kind the report counts, in Japanese or English."""

from __future__ import annotations

from omoide.bots._erasure import describe_erasure


def test_every_kind_is_shown_including_kinds_it_has_no_name_for():
    erased = {"memories": 3, "messages": 1_200, "chunks_rewritten": 2, "brand_new_kind": 1}
    assert describe_erasure(erased, "en", where="server").splitlines() == [
        "Erased everything I kept about you in this server:",
        "• memories: 3",
        "• messages: 1,200",
        "• knowledge chunks rewritten: 2",
        "• brand new kind: 1",
    ]
    assert describe_erasure(erased, "ja", where="ワークスペース").splitlines() == [
        "このワークスペースであなたについて保存していたデータを消去しました:",
        "• メモリ: 3 件",
        "• メッセージ: 1,200 件",
        "• 書き換えた長期記憶の断片: 2 件",
        "• brand_new_kind: 1 件",
    ]


def test_nothing_stored_says_so():
    zeros = {"memories": 0, "sessions": 0}
    assert describe_erasure(zeros, "en", where="workspace") == (
        "I had nothing stored about you in this workspace: nothing was erased."
    )
    assert "何も消去していません" in describe_erasure(zeros, "ja", where="ワークスペース")
