"""The inspector's UI text in Japanese and English, and how a request's language is chosen.

One catalog holds both languages side by side (``key: (ja, en)``), so a key can never exist in
one language only. The language is, in order: ``?lang=`` on any page (remembered in a cookie),
that cookie, the browser's ``Accept-Language`` (by q-value), else English.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from starlette.requests import Request

Lang = Literal["ja", "en"]
LANGS: tuple[Lang, ...] = ("ja", "en")
LANG_COOKIE = "omoide_ui_lang"

CATALOG: dict[str, tuple[str, str]] = {
    "app.title": ("omoide インスペクター", "omoide inspector"),
    "nav.overview": ("概要", "Overview"),
    "nav.sessions": ("セッション", "Sessions"),
    "nav.knowledge": ("ナレッジ", "Knowledge"),
    "nav.search": ("検索", "Search"),
    "nav.memories": ("メモリー", "Memories"),
    "nav.summaries": ("要約", "Summaries"),
    "nav.users": ("ユーザー", "Users"),
    "nav.workspaces": ("ワークスペース", "Workspaces"),
    "nav.logout": ("ログアウト", "Log out"),
    "nav.language": ("English", "日本語"),
    "login.title": ("ログイン", "Log in"),
    "login.key": ("API キー", "API key"),
    "login.help": (
        "ワークスペースの API キー（omk_…）か管理キー（OMOIDE_ADMIN_KEY）を入力してください。",
        "Enter a workspace API key (omk_…) or the admin key (OMOIDE_ADMIN_KEY).",
    ),
    "login.submit": ("ログイン", "Log in"),
    "login.rejected": ("この API キーは不明か失効しています。", "This API key is unknown or revoked."),
    "login.expired": (
        "フォームの有効期限が切れました。もう一度お試しください。",
        "The form expired; please try again.",
    ),
    "ws.title": ("ワークスペースを選ぶ", "Choose a workspace"),
    "ws.help": (
        "管理キーでログインしています。見るワークスペースを選んでください。",
        "You are logged in with the admin key: choose the workspace to inspect.",
    ),
    "ws.other": ("ID を入力", "Enter an id"),
    "ws.open": ("開く", "Open"),
    "ws.current": ("ワークスペース", "Workspace"),
    "ws.none": ("ワークスペースはまだありません。", "No workspace yet."),
    "ws.keys": ("API キー", "API keys"),
    "ov.title": ("ワークスペースの概要", "Workspace overview"),
    "ov.counts": ("件数", "Counts"),
    "ov.sessions": ("セッション", "Sessions"),
    "ov.sources": ("ソース", "Sources"),
    "ov.chunks": ("チャンク", "Chunks"),
    "ov.waiting": ("処理待ち", "Waiting"),
    "ov.unarchived": ("未アーカイブのメッセージ", "Messages to archive"),
    "ov.to_embed": ("未埋め込みのチャンク", "Chunks to embed"),
    "ov.to_summarise": ("要約待ちの範囲", "Scopes to summarise"),
    "ov.to_summarise_help": (
        "直近 {hours} 時間にメッセージのあるチャンネル・スレッド・ユーザー {active} 件のうち、最新の要約より新しいメッセージがあるもの",
        "of the {active} channels, threads and users with messages in the last {hours} h: those with "
        "messages newer than their latest summary",
    ),
    "ov.units_missing": ("ユニット未作成のチャンク", "Chunks without units"),
    "ov.embedded": ("埋め込み済み（モデル別）", "Embedded (by model)"),
    "ov.job": ("埋め込みジョブ", "Embedding job"),
    "ov.job_none": ("このホストで動いているジョブはありません。", "No job is running on this host."),
    "ov.running": ("実行中", "running"),
    "ov.finished": ("完了", "finished"),
    "ov.models": ("使用中のモデル", "Models in use"),
    "ov.embedder": ("埋め込みモデル", "Embedder"),
    "ov.chat_model": ("チャットモデル", "Chat model"),
    "ov.reranker": ("リランカー", "Reranker"),
    "ov.tokenizer": ("検索トークナイザー", "Search tokenizer"),
    "ov.backend": ("データベース", "Database"),
    "ov.errors": ("ワーカーの最近のエラー", "Recent worker errors"),
    "ov.errors_none": ("最近のエラーはありません。", "No recent errors."),
    "ov.errors_admin_only": (
        "ワーカーの処理は全ワークスペースにまたがるため、エラーは管理キーでのみ表示されます。",
        "Worker runs span every workspace, so their errors are shown to the admin key only.",
    ),
    "ov.workers": ("ワーカー", "Workers"),
    "ov.workers_alive": ("稼働中（{n} プロセス）", "alive ({n} processes)"),
    "ov.workers_none": ("報告なし", "none reported"),
    "ov.workers_stopped": ("停止", "stopped"),
    "ov.workers_dead": ("応答なし", "not responding"),
    "ov.unavailable": ("利用不可", "unavailable"),
    "common.none": ("なし", "none"),
    "common.filter": ("絞り込み", "Filter"),
    "common.next": ("次へ", "Next"),
    "common.prev": ("前へ", "Previous"),
    "common.first": ("最初へ", "First"),
    "common.back": ("戻る", "Back"),
    "common.cancel": ("キャンセル", "Cancel"),
    "common.save": ("保存", "Save"),
    "common.delete": ("削除", "Delete"),
    "common.created": ("作成", "Created"),
    "common.updated": ("更新", "Updated"),
    "common.empty": ("ありません。", "Nothing here."),
    "common.open": ("開く", "Open"),
    "common.jump": ("元のメッセージ", "Original messages"),
    "common.all": ("すべて", "all"),
    "sess.title": ("セッション", "Sessions"),
    "sess.platform": ("プラットフォーム", "Platform"),
    "sess.channel": ("チャンネル", "Channel"),
    "sess.thread": ("スレッド", "Thread"),
    "sess.user": ("ユーザー", "User"),
    "sess.state": ("状態", "State"),
    "sess.key": ("キー", "Key"),
    "sess.messages": ("メッセージ", "Messages"),
    "sess.archived": ("アーカイブ済み", "Archived"),
    "sess.last_active": ("最終アクティブ", "Last active"),
    "sess.window": ("会話ウィンドウ", "Conversation window"),
    "sess.stored": ("保存されたメッセージ", "Stored messages"),
    "sess.in_window": ("ウィンドウ内", "in window"),
    "sess.archived_to": ("アーカイブ先のチャンク", "Archived into these chunks"),
    "sess.private": ("非公開", "private"),
    "sess.reset": ("リセット", "Reset"),
    "sess.delete": ("セッションを削除", "Delete session"),
    "sess.reset_confirm": (
        "このセッションの会話ウィンドウを空にします。保存済みメッセージはアーカイブまで残ります。",
        "The session's window becomes empty; stored messages stay until they are archived.",
    ),
    "sess.delete_confirm": (
        "このセッションと保存済みメッセージをすべて削除します。元に戻せません。",
        "This deletes the session and all its stored messages. It cannot be undone.",
    ),
    "sess.reset_done": ("セッションをリセットしました。", "The session was reset."),
    "sess.deleted": ("セッションを削除しました。", "The session was deleted."),
    "confirm.title": ("確認", "Please confirm"),
    "confirm.yes": ("はい、実行します", "Yes, do it"),
    "kn.title": ("ナレッジ", "Knowledge"),
    "kn.sources": ("ソース", "Sources"),
    "kn.type": ("種類", "Type"),
    "kn.source_title": ("タイトル", "Title"),
    "kn.status": ("状態", "Status"),
    "kn.chunks": ("チャンク", "Chunks"),
    "kn.chunk": ("チャンク", "Chunk"),
    "kn.tokens": ("トークン", "tokens"),
    "kn.authors": ("発言者", "Authors"),
    "kn.span": ("期間", "Time span"),
    "kn.seq": ("メッセージ番号", "Message seq"),
    "kn.message_ids": ("メッセージ ID", "Message ids"),
    "kn.session": ("元のセッション", "Origin session"),
    "kn.metadata": ("メタデータ", "Metadata"),
    "search.title": ("検索プレイグラウンド", "Search playground"),
    "search.query": ("クエリ", "Query"),
    "search.mode": ("モード", "Mode"),
    "search.k": ("件数", "Hits"),
    "search.author": ("発言者", "Author"),
    "search.source_type": ("ソースの種類", "Source type"),
    "search.since": ("開始日", "Since"),
    "search.until": ("終了日", "Until"),
    "search.submit": ("検索", "Search"),
    "search.ask": ("質問する（ask）", "Ask"),
    "search.explain": ("各リストの順位", "Rank in each list"),
    "search.fused": ("融合スコア", "Fused score"),
    "search.scores": ("スコア", "Scores"),
    "search.unit": ("一致した単位", "Matched unit"),
    "search.line": ("{n} 行目", "line {n}"),
    "search.hits": ("ヒット", "Hits"),
    "search.no_hits": ("ヒットはありません。", "No hits."),
    "search.notes": ("メモ", "Notes"),
    "search.timings": ("時間 (ms)", "Timings (ms)"),
    "search.answer": ("回答", "Answer"),
    "search.citations": ("引用", "Citations"),
    "search.evidence": ("根拠", "Evidence"),
    "search.model": ("モデル", "Model"),
    "search.chunk_text": ("チャンク本文", "Chunk text"),
    "mem.title": ("メモリー", "Memories"),
    "mem.one": ("メモリー", "Memory"),
    "mem.user": ("ユーザー ID", "User id"),
    "mem.show": ("表示", "Show"),
    "mem.search": ("このユーザーのメモリーを検索", "Search this user's memories"),
    "mem.content": ("内容", "Content"),
    "mem.category": ("カテゴリー", "Category"),
    "mem.tags": ("タグ（カンマ区切り）", "Tags (comma separated)"),
    "mem.edit": ("編集", "Edit"),
    "mem.delete_confirm": ("このメモリーを削除します。", "This deletes the memory."),
    "mem.deleted": ("メモリーを削除しました。", "The memory was deleted."),
    "mem.saved": ("保存しました。", "Saved."),
    "mem.history": ("履歴", "History"),
    "mem.action": ("操作", "Action"),
    "mem.actor": ("実行者", "By"),
    "mem.when": ("日時", "When"),
    "mem.score": ("スコア", "Score"),
    "mem.known_users": ("セッションのあるユーザー", "Users with sessions"),
    "mem.pick_user": ("ユーザー ID を入力してください。", "Enter a user id."),
    "sum.title": ("要約", "Summaries"),
    "sum.scope": ("範囲", "Scope"),
    "sum.kind": ("種類", "Kind"),
    "sum.version": ("版", "Version"),
    "sum.versions": ("版の履歴", "Versions"),
    "sum.built_from": ("元にしたもの", "Built from"),
    "sum.messages": ("メッセージ数", "messages"),
    "sum.latest_message": ("最新メッセージ", "latest message"),
    "users.title": ("ユーザー", "Users"),
    "users.forget": ("このユーザーを忘れる", "Forget this user"),
    "users.forget_help": (
        "ユーザーのメモリー、セッションとメッセージ、ナレッジ内の発言、要約、トランスクリプトを消去します。元に戻せません。",
        "Erases the user's memories, sessions and messages, their lines in knowledge, summaries drawn "
        "from them and their transcripts. It cannot be undone.",
    ),
    "users.receipt": ("消去の受領書", "Erasure receipt"),
    "users.kind": ("種類", "Kind"),
    "users.count": ("件数", "Count"),
    "erase.memories": ("メモリー", "memories"),
    "erase.sessions": ("セッション", "sessions"),
    "erase.messages": ("メッセージ", "messages"),
    "erase.summaries": ("要約の版", "summary versions"),
    "erase.chunks_rewritten": ("書き換えたチャンク", "chunks rewritten"),
    "erase.chunks_deleted": ("削除したチャンク", "chunks deleted"),
    "erase.sources_deleted": ("削除したソース", "sources deleted"),
    "erase.transcripts": ("トランスクリプトのファイル", "transcript files"),
    "error.title": ("エラー", "Error"),
    "error.not_found": ("見つかりません。", "Not found."),
    "error.internal": (
        "サーバーでエラーが発生しました。詳しくはサーバーのログを、このリクエスト ID で探してください。",
        "The server failed. Its logs have the details: look for this request id.",
    ),
    "error.request_id": ("リクエスト ID", "Request id"),
    "error.method_not_allowed": (
        "このアドレスはフォームの送信先です。前のページに戻ってください。",
        "This address only takes a form; go back to the page before.",
    ),
    "error.csrf": (
        "フォームの確認トークンが一致しません。ページを再読み込みしてやり直してください。",
        "The form's check token did not match: reload the page and try again.",
    ),
}


def translator(lang: Lang) -> Callable[..., str]:
    """``t(key, **values)``: the text of ``key`` in ``lang`` (the key itself when missing, so a gap shows)."""
    index = LANGS.index(lang)

    def t(key: str, **values: object) -> str:
        pair = CATALOG.get(key)
        text = key if pair is None else pair[index]
        return text.format(**values) if values else text

    return t


def _from_accept_language(header: str) -> Lang | None:
    """The best of ``ja``/``en`` in an ``Accept-Language`` header (q-values honoured), or ``None``."""
    best: tuple[float, int, Lang] | None = None
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        primary = tag.strip().lower().split("-")[0]
        if primary not in LANGS:
            continue
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        if quality <= 0:
            continue
        lang: Lang = "ja" if primary == "ja" else "en"
        candidate = (quality, -position, lang)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    return None if best is None else best[2]


def choose_language(request: Request) -> Lang:
    """The request's UI language (see the module docstring)."""
    for value in (request.query_params.get("lang"), request.cookies.get(LANG_COOKIE)):
        if value == "ja":
            return "ja"
        if value == "en":
            return "en"
    return _from_accept_language(request.headers.get("accept-language", "")) or "en"


__all__ = ["CATALOG", "LANGS", "LANG_COOKIE", "Lang", "choose_language", "translator"]
