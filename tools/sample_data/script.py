"""The conversation of the sample server "omoide lab" (fictional), as data for ``_generate.py``.

A small community maintains an open-source Discord bot, *mochi-bot*, and holds a
"もくもく会" (a quiet co-working meetup) in Tokyo. Six weeks of chat (6 October to
16 November 2025, Japan time) over #general, #dev, #random, #イベント and one thread,
in Japanese and English. Everyone and everything here is made up; the links point to a
fictional organisation.

Each scene is a channel, a start time (JST) and lines ``(author, minutes after the
previous line, text[, options])``. Options: ``label`` (a name for replies and questions),
``reply`` (label of the message answered), ``edited`` (minutes until the last edit),
``attach`` (``[(file name, bytes)]``), ``embed`` (dict), ``sticker`` (name), ``type``
(a system kind), ``ref`` (label a system message points to), ``reactions``
(``[(emoji, count)]``), ``interaction`` (``(command, user)``), ``pinned``.
"""

from __future__ import annotations

from typing import Any

GUILD = {"name": "omoide lab", "created": "2024-10-01 10:00"}

# key: (username, display name, role, user-id creation date)
MEMBERS: dict[str, tuple[str, str, str, str]] = {
    "haruka": ("haruka.sato", "はるか", "運営", "2017-04-12 09:00"),
    "kenji": ("kenji_t", "Kenji", "メンテナ", "2016-11-03 21:00"),
    "emily": ("emily.c", "Emily", "メンテナ", "2018-02-20 18:30"),
    "yui": ("yui_design", "ゆい", "デザイン", "2019-07-07 12:00"),
    "marco": ("marco.rossi", "Marco", "メンテナ", "2017-09-15 08:00"),
    "aoi": ("aoi_m", "あおい", "イベント", "2020-03-01 15:00"),
    "sora": ("sora_ito", "そら", "インフラ", "2018-12-24 23:00"),
    "daichi": ("daichi_k", "だいち", "", "2022-04-05 10:00"),
    "mochibot": ("mochi-bot", "mochi-bot", "Bot", "2024-10-02 12:00"),
}
BOTS = frozenset({"mochibot"})

ROLES = {
    "運営": ("#E67E22", 5),
    "メンテナ": ("#3498DB", 4),
    "インフラ": ("#1ABC9C", 3),
    "デザイン": ("#E91E63", 3),
    "イベント": ("#2ECC71", 3),
    "Bot": ("#95A5A6", 2),
}

# key: (name, category, topic, creation date)
CHANNELS: dict[str, tuple[str, str, str | None, str]] = {
    "general": ("general", "コミュニティ", "omoide lab へようこそ！雑談・お知らせはこちら", "2024-10-01 10:00"),
    "dev": ("dev", "開発", "mochi-bot の開発 | https://github.com/omoide-lab/mochi-bot", "2024-10-01 10:05"),
    "random": ("random", "コミュニティ", "なんでも", "2024-10-01 10:06"),
    "event": ("イベント", "コミュニティ", "もくもく会・オフ会の相談", "2024-10-03 19:00"),
}
THREADS: dict[str, tuple[str, str, str]] = {
    # key: (name, parent channel key, created at)
    "release": ("v0.4.0 リリースチェックリスト", "dev", "2025-10-20 21:01"),
}

REPO = "https://github.com/omoide-lab/mochi-bot"
DOCS = "https://omoide-lab.github.io/mochi-bot"

Line = tuple[Any, ...]
SCENES: list[tuple[str, str, list[Line]]] = [
    # ------------------------------------------------------------------ #general
    (
        "general",
        "2025-10-06 20:05",
        [
            ("haruka", 0, "みなさんこんばんは！10月になったので、今期の予定を共有します 🙌"),
            (
                "haruka",
                1,
                "大きいのは2つ。① mochi-bot v0.4.0 のリリース（目標 10/24）② 11/15(土) のもくもく会。"
                "詳細はそれぞれ #dev と #イベント で詰めていきましょう",
            ),
            ("emily", 3, "Sounds great! Both in one month, busy autumn 😄"),
            ("kenji", 2, "了解です。v0.4.0 には日本語検索の改善を入れたいですね"),
            (
                "haruka",
                4,
                "担当をざっくり決めたいです。案：リリース管理 → @Marco、ドキュメントと翻訳（日英）→ @Emily、"
                "検索まわり → @Kenji、ロゴ・デザイン → @ゆい、会場とおやつ → @あおい、デモ用ボットのサーバー → @そら 。どうでしょう？",
                {"label": "roles"},
            ),
            ("marco", 6, "Release manager again, fine by me 👍 I'll prepare the checklist."),
            (
                "emily",
                1,
                "Happy to own the docs and the translation! I'll keep the Japanese and English documentation "
                "in sync for v0.4.0.",
                {"label": "emily_docs", "reply": "roles"},
            ),
            ("aoi", 2, "会場探し了解です〜。候補いくつか当たってみます！"),
            ("yui", 5, "ロゴ、ちょうどリニューアルしたいと思ってたのでやります✏️"),
            ("sora", 7, "サーバー担当OKです。今のデモbotの構成もあとで共有しますね"),
            (
                "haruka",
                3,
                "ありがとうございます！では決定で。困ったらいつでも相談してください 🙏",
                {"reactions": [("👍", 5)]},
            ),
        ],
    ),
    (
        "general",
        "2025-10-09 12:31",
        [
            ("emily", 0, "Quick question: is the docs site still deployed from the `gh-pages` branch?"),
            ("kenji", 4, "そうです。main にマージされると GitHub Actions でビルドして gh-pages に push されます"),
            ("emily", 2, f"Perfect, thanks! The URL is {DOCS}/ right?"),
            ("kenji", 1, "Yes! 日本語版は /ja/ 以下です"),
        ],
    ),
    (
        "general",
        "2025-10-13 15:00",
        [
            ("haruka", 0, "今日は祝日ですね。みなさん何してますか？"),
            ("yui", 3, "ロゴの作業してます〜。今週中には見せられそうです"),
            ("kenji", 2, "PR #145 の仕上げ中です"),
            ("emily", 4, "Oh, is it a holiday today? Sports Day, right?"),
            ("haruka", 2, "そうです、スポーツの日です🏃"),
            ("marco", 6, "No holiday in Italy today, just a regular Monday for me 😅"),
        ],
    ),
    (
        "general",
        "2025-10-16 21:40",
        [
            (
                "sora",
                0,
                "昨日の夜、うちの停電でデモ用の mochi-bot が3時間くらい止まってました。すみません🙇 "
                "今は自宅の Raspberry Pi 4 で動かしてるんですが、そろそろ限界かも",
            ),
            ("haruka", 3, "お疲れさまです…停電は仕方ないですね"),
            ("sora", 2, "提案なんですが、デモbotを VPS に移しませんか？さくらのVPSの 2GB プランで月1,800円くらいです"),
            (
                "marco",
                5,
                "+1. A Pi at home is fine for testing, but the demo should be reliable, especially before the meetup.",
            ),
            ("kenji", 1, "賛成です。PostgreSQL も同じ VPS に置けますか？"),
            ("sora", 2, "置けます。pgvector 入りの PostgreSQL 16 を Docker で立てる予定です"),
            (
                "haruka",
                4,
                "費用はコミュニティ予算から出しましょう。VPS への移行、そらさんお願いします！",
                {"label": "vps_decision"},
            ),
            ("sora", 1, "了解です！今週末に作業します 💪"),
        ],
    ),
    (
        "general",
        "2025-10-20 22:10",
        [
            (
                "sora",
                0,
                "デモ用の mochi-bot を VPS に移行しました！さくらのVPS 2GB プラン（石狩リージョン）で動いてます。"
                "監視は UptimeRobot で5分おきにチェックしています",
                {"label": "vps_done", "reactions": [("🎉", 4)]},
            ),
            ("haruka", 2, "はやい！ありがとうございます🎉"),
            ("emily", 1, "Thank you Sora! The bot already feels faster."),
            ("sora", 3, "Raspberry Pi は開発用のステージング環境として残しておきます"),
        ],
    ),
    (
        "general",
        "2025-10-27 19:02",
        [
            ("daichi", 0, "Joined the server.", {"type": "GuildMemberJoin"}),
            (
                "mochibot",
                0.2,
                f"ようこそ @だいち さん！ #general で自己紹介してもらえると嬉しいです。"
                f"はじめての方は {DOCS}/ja/contributing/ もどうぞ 🍡",
            ),
            ("daichi", 1.5, "", {"sticker": "Wave"}),
            (
                "daichi",
                1,
                "はじめまして、だいちです！大学で情報工学を勉強している3年生です。Python は2年くらい書いてます",
            ),
            (
                "daichi",
                1,
                "研究室で自然言語処理をやっていて、日本語の検索に興味があって mochi-bot を見つけました。"
                "OSS にコントリビュートするのは初めてなのでよろしくお願いします！",
                {"label": "daichi_intro"},
            ),
            ("haruka", 2, "ようこそ〜！🎉 大歓迎です"),
            ("kenji", 1, "日本語検索！ちょうど今月いじってたところです。ぜひ一緒にやりましょう"),
            ("emily", 3, "Welcome Daichi! Feel free to write in Japanese or English, whatever is comfortable."),
            ("daichi", 2, "ありがとうございます！English も少しずつ頑張ります 😅"),
            (
                "haruka",
                2,
                f"good first issue のラベルが付いてる issue から始めるのがおすすめです → {REPO}/labels/good%20first%20issue",
            ),
            ("daichi", 1, "見てみます！"),
        ],
    ),
    (
        "general",
        "2025-10-28 22:30",
        [
            (
                "haruka",
                0,
                "🎉 mochi-bot v0.4.0 をリリースしました！日本語検索の改善（SudachiPy）、Python 3.10〜3.13 対応、"
                "リマインダーの二重通知の修正などが入っています。Marco さん、みなさん、お疲れさまでした！",
                {"label": "release_announce", "reactions": [("🎉", 7), ("🍡", 3)]},
            ),
            ("marco", 2, "Thanks everyone! It was a team effort 🙌"),
            ("emily", 1, f"English release notes are up: {DOCS}/en/changelog/#v040"),
            ("yui", 3, "おめでとうございます〜！🎂"),
            ("daichi", 1, "おめでとうございます！さっそく pip install してみました"),
        ],
    ),
    (
        "general",
        "2025-10-30 21:00",
        [
            (
                "daichi",
                0,
                "v0.4.0 を自分のサーバーに入れてみたんですが、/search が「権限がありません」になります…",
                {"label": "perm_q"},
            ),
            ("kenji", 3, "ボットに「メッセージ履歴を読む」権限はついてますか？", {"reply": "perm_q"}),
            ("daichi", 2, "ついてませんでした！つけたら動きました 🙏"),
            ("emily", 4, "I'll add this to the FAQ. It's the third time someone has asked 😅"),
            ("haruka", 1, "ありがとうございます！"),
        ],
    ),
    (
        "general",
        "2025-11-05 08:50",
        [
            ("haruka", 0, "おはようございます☀️ 朝晩けっこう冷えるようになりましたね"),
            ("yui", 3, "寒いです〜、ついにコート出しました"),
            ("marco", 2, "It's 8°C in Milan this morning, autumn everywhere 🍂"),
            ("sora", 10, "おはようございます。VPS、先週の稼働率は 100% でした 👍"),
            ("haruka", 2, "安定してますね！"),
        ],
    ),
    (
        "general",
        "2025-11-10 20:30",
        [
            (
                "haruka",
                0,
                "会計の共有です。今期のコミュニティ予算は GitHub Sponsors から月 12,000円くらい入っています。"
                "VPS の 1,800円/月 と、もくもく会の会場費 15,000円 はここから出します",
            ),
            ("kenji", 3, "透明でありがたいです"),
            ("emily", 2, "Thanks for sharing, Haruka. Should we put this on the wiki too?"),
            ("haruka", 2, "ですね、wiki の「運営」ページにまとめておきます"),
        ],
    ),
    (
        "general",
        "2025-11-12 12:10",
        [
            (
                "emily",
                0,
                "For translators: I made a glossary of the terms we use in the docs (記憶 = memory, 要約 = summary, "
                f"もくもく会 = mokumoku-kai, kept as is). It's on the wiki: {REPO}/wiki/Glossary",
            ),
            ("haruka", 3, "助かります！「もくもく会」はそのままなんですね笑"),
            ("emily", 2, 'Yes! "Quiet co-working meetup" loses the charm 😄'),
            ("daichi", 4, "英語の README を読むときに使わせてもらいます"),
            ("kenji", 2, "「スレッド」は thread でいいですよね？"),
            ("emily", 1, "Yes, same for channel and server."),
        ],
    ),
    (
        "general",
        "2025-11-13 21:00",
        [
            (
                "emily",
                0,
                'FAQ updated: I added "Why does /search say I don\'t have permission?" and '
                f'"Which Python versions are supported?" → {DOCS}/en/faq/',
            ),
            ("haruka", 2, "ありがとうございます！日本語版もありますか？"),
            ("emily", 1, "Yes, /ja/faq/ is updated too."),
            ("daichi", 3, "僕の質問が FAQ に…！笑"),
            ("kenji", 2, "良い質問は FAQ になる運命です"),
        ],
    ),
    (
        "general",
        "2025-11-16 10:15",
        [
            (
                "haruka",
                0,
                "昨日のもくもく会、参加してくださったみなさんありがとうございました！現地15名・オンライン6名の合計21名でした 🙏",
                {"label": "meetup_thanks"},
            ),
            ("aoi", 3, "会場の片付けまで手伝ってくれた方々、ありがとうございました〜！"),
            ("emily", 2, "It was so much fun! The LT session was great."),
            ("daichi", 4, "初めてのLT緊張しましたが、楽しかったです！"),
            ("haruka", 5, "次回は12/20(土)で仮押さえしようと思っています。場所は東京か京都で迷い中です"),
            ("emily", 1, "Kyoto! I can help find a place near Kyoto Station 😄"),
            ("marco", 2, "I'll be back in Italy by then, but I'll join online."),
            ("haruka", 3, "京都いいですね、検討します！"),
        ],
    ),
    (
        "general",
        "2025-10-23 23:20",
        [
            (
                "haruka",
                0,
                "お知らせです。v0.4.0 のリリースは、見つかったバグ（#151）の修正のため 10/24 から 10/28 に延期になりました 🙏",
            ),
            ("yui", 4, "了解です！直ってから出す方が安心ですね"),
            ("daichi", 9, "楽しみに待ってます"),
            ("emily", 3, "Thanks for the update. Quality first!"),
            ("aoi", 2, "みなさん無理せず〜"),
        ],
    ),
    # ---------------------------------------------------------------------- #dev
    (
        "dev",
        "2025-10-07 21:15",
        [
            (
                "kenji",
                0,
                f"日本語のメッセージを検索すると結果が0件になるバグを見つけました。Issue 立てました {REPO}/issues/142",
                {
                    "label": "bug142_report",
                    "embed": {
                        "title": "Search returns no results for Japanese messages · Issue #142 · omoide-lab/mochi-bot",
                        "url": f"{REPO}/issues/142",
                        "description": "Searching for 天気 returns nothing although several messages contain it. "
                        "English queries work.",
                    },
                },
            ),
            ("emily", 4, "I can reproduce it. English queries work fine on my side, but 天気 returns nothing."),
            (
                "kenji",
                3,
                "原因わかりました。トークナイザが空白でしか単語を分割していないので、日本語の文がまるごと1トークンになってます。"
                "「今日は天気がいい」が1語扱いなので、「天気」で検索しても0件になります",
                {"label": "bug142_cause"},
            ),
            ("marco", 2, "Ah, classic. Whitespace tokenization and CJK don't mix."),
            ("yui", 3, "なるほど…日本語って単語の間にスペースないですもんね"),
            ("kenji", 2, "直し方の候補は ① SudachiPy で形態素解析 ② 文字 bigram。精度なら①、依存の軽さなら②です"),
            ("marco", 4, "What's the install size of SudachiPy plus a dictionary?"),
            ("kenji", 2, "sudachidict_core 込みで 70MB くらいです。wheel があるので pip だけで入ります"),
            ("emily", 3, "I'd prefer quality. Japanese speakers are the majority of our community."),
            (
                "haruka",
                5,
                "じゃあ SudachiPy でいきましょう。辞書が入らない環境向けに bigram をフォールバックとして残す、で決定で！",
                {"label": "bug142_decision"},
            ),
            ("kenji", 1, "了解です、PR 作ります 🔧"),
        ],
    ),
    (
        "dev",
        "2025-10-10 22:00",
        [
            (
                "marco",
                0,
                "Proposal for v0.4.0: drop Python 3.9. It reaches end-of-life this month (October 2025), and it keeps "
                "us from using `match` and the new typing syntax.",
            ),
            ("kenji", 3, "賛成です。3.9 でしか動かない環境はもうあまりないはず"),
            ("sora", 2, "デモ用サーバーは 3.12 なので問題なしです"),
            ("emily", 4, "We should mention it in the migration guide. I'll write a short section."),
            (
                "marco",
                3,
                "Decision then: v0.4.0 supports Python 3.10, 3.11, 3.12 and 3.13. I'll update the CI matrix on "
                "GitHub Actions and `requires-python`.",
                {"label": "py_versions"},
            ),
            ("haruka", 2, "👍 ありがとうございます"),
        ],
    ),
    (
        "dev",
        "2025-10-13 23:05",
        [
            ("kenji", 0, f"SudachiPy 版の PR 出しました → {REPO}/pull/145 レビューお願いします 🙏"),
            (
                "mochibot",
                2,
                "",
                {
                    "embed": {
                        "title": "❌ CI failed: PR #145 (windows-latest, Python 3.13)",
                        "url": f"{REPO}/actions/runs/11329874512",
                        "description": "ERROR: Could not find a version that satisfies the requirement sudachipy==0.6.7",
                        "fields": [("Branch", "feature/sudachi-tokenizer"), ("Commit", "3f9c2ab")],
                    }
                },
            ),
            ("kenji", 4, "あー、3.13 の Windows 用 wheel は 0.6.8 からなのか…"),
            ("marco", 2, "Just use `sudachipy>=0.6.8`, we don't need the exact pin."),
            ("kenji", 6, "ピンを外して >=0.6.8 にしました"),
            (
                "mochibot",
                5,
                "",
                {
                    "embed": {
                        "title": "✅ CI passed: PR #145",
                        "url": f"{REPO}/actions/runs/11329951207",
                        "description": "All 12 jobs passed in 6m 41s",
                    }
                },
            ),
            ("emily", 8, "Reviewed! Two small comments about docstrings, otherwise LGTM."),
        ],
    ),
    (
        "dev",
        "2025-10-17 22:30",
        [
            (
                "kenji",
                0,
                "検索のスコアリングについて相談です。今はベクトル検索だけなんですが、キーワード検索と組み合わせたいです",
            ),
            ("marco", 3, "Hybrid search with RRF? That's what most projects do now."),
            ("kenji", 2, "そうです、RRF で k=60 にしようと思ってます"),
            ("emily", 4, 'Would that help with names? Searching for "Daichi" vs だいち is tricky.'),
            ("kenji", 3, "表記ゆれは別問題ですね…v0.5 以降で考えます"),
            ("sora", 2, "PostgreSQL なら pg_trgm もありますけど、日本語だと微妙なんですよね"),
            (
                "kenji",
                1,
                "ですね。v0.4.0 ではベクトル検索と SudachiPy の全文検索を RRF で組み合わせるところまでにします",
            ),
        ],
    ),
    (
        "dev",
        "2025-10-20 21:00",
        [
            ("marco", 0, "I'm opening a thread for the v0.4.0 release checklist so this channel stays readable."),
            ("marco", 0.8, "Started a thread.", {"type": "ThreadCreated", "thread": "release"}),
        ],
    ),
    (
        "dev",
        "2025-10-22 21:50",
        [
            (
                "kenji",
                0,
                "#145 をマージしました！SudachiPy（分割モードC）で形態素解析して、辞書が入っていない環境では文字 bigram に"
                "フォールバックします。これで #142 の日本語検索のバグは解決です",
                {"label": "fix145_merged", "reactions": [("🎉", 5)]},
            ),
            ("emily", 2, "🎉 Confirmed on the staging bot: searching 天気 now finds last week's message."),
            (
                "kenji",
                2,
                "ベンチマークも取りました。1万件で検索の p95 が 38ms → 41ms なので、ほぼ変わらずです",
                {"attach": [("search-bench-2025-10-22.txt", 2841)], "edited": 6},
            ),
            ("marco", 3, "Nice numbers. I'll put them in the changelog."),
        ],
    ),
    (
        "dev",
        "2025-10-28 21:56",
        [
            (
                "mochibot",
                0,
                "📦 新しいリリース: mochi-bot v0.4.0",
                {
                    "label": "bot_release",
                    "embed": {
                        "title": "Release v0.4.0 · omoide-lab/mochi-bot",
                        "url": f"{REPO}/releases/tag/v0.4.0",
                        "description": "日本語検索の改善 (#142)、Python 3.10〜3.13 対応、リマインダーの二重通知を修正 (#151)",
                    },
                },
            ),
            ("marco", 3, "🎉", {"reply": "bot_release"}),
        ],
    ),
    (
        "dev",
        "2025-11-01 14:00",
        [
            ("haruka", 0, "v0.5 の計画を立てましょう！やりたいことを挙げてください"),
            ("kenji", 3, "Slack 対応をやりたいです。エクスポートの取り込みと、Slack bot としての動作"),
            ("emily", 2, "A `/summary` command! People keep asking for a way to summarize long threads."),
            ("sora", 4, "運用まわりだと、ヘルスチェック用のエンドポイントが欲しいです"),
            (
                "daichi",
                3,
                "あの、good first issue の #160（/remind の時刻に「明日」「来週」を使えるようにする）をやってみてもいいですか？",
            ),
            ("haruka", 1, "もちろん！ぜひお願いします 🙌"),
            ("kenji", 2, "日付のパースは dateparser を使うと楽かもです。困ったら聞いてください"),
            (
                "marco",
                5,
                "Proposed schedule for v0.5.0: feature freeze on Friday November 21, release candidate on "
                "November 28, final release on December 5.",
                {"label": "v05_schedule"},
            ),
            (
                "haruka",
                3,
                "それでいきましょう！v0.5 は 11/21 フィーチャーフリーズ、12/5 リリースで決定です。"
                "リリース管理は引き続き Marco さんにお願いします",
                {"label": "v05_decision", "reply": "v05_schedule"},
            ),
            ("marco", 1, "👍"),
        ],
    ),
    (
        "dev",
        "2025-11-03 16:20",
        [
            ("daichi", 0, f"はじめての PR を出しました！ドキュメントの typo 修正です → {REPO}/pull/158"),
            ("emily", 6, "Thanks Daichi! Merged 🎉 Welcome to the contributors list."),
            ("daichi", 2, "やった！ありがとうございます！！"),
            (
                "mochibot",
                0.3,
                "",
                {
                    "embed": {
                        "title": "🔀 PR #158 merged: docs: fix typos in the quick start (ja)",
                        "url": f"{REPO}/pull/158",
                        "description": "Merged by emily.c into main",
                    }
                },
            ),
        ],
    ),
    (
        "dev",
        "2025-11-05 21:30",
        [
            (
                "kenji",
                0,
                "Slack 対応の設計メモです。Slack のエクスポートは channels.json と users.json があって、"
                "チャンネルごとのフォルダに日付ごとの JSON が並んでます",
            ),
            ("emily", 3, "Do Slack exports include private channels?"),
            ("kenji", 2, "無料プランだと公開チャンネルだけです。有料プランでもプライベートは管理者の申請が必要です"),
            ("marco", 2, "We should document that clearly, otherwise people will think messages are missing."),
            ("kenji", 1, "ドキュメントに書きます"),
            ("emily", 2, "I'll translate it once it's ready."),
            (
                "sora",
                5,
                "Slack の ts ってメッセージ ID 兼タイムスタンプなんですよね。float にすると精度が落ちるので、"
                "文字列のまま扱った方がいいです",
            ),
            ("kenji", 2, "了解です、文字列で持ちます 👍"),
        ],
    ),
    (
        "dev",
        "2025-11-08 15:10",
        [
            (
                "daichi",
                0,
                "#160 で質問です。「来週」は次の月曜日のことにしますか？それとも7日後ですか？",
                {"label": "next_week_q"},
            ),
            ("kenji", 5, "良い質問…Google カレンダーは7日後っぽいですね"),
            ("emily", 3, 'In English "next week" is ambiguous too. I\'d say 7 days later, and mention it in the docs.'),
            (
                "haruka",
                2,
                "「来週」は7日後、で統一しましょう。ドキュメントにも書いておいてください",
                {"reply": "next_week_q"},
            ),
            ("daichi", 1, "了解です！テストも書きます"),
        ],
    ),
    (
        "dev",
        "2025-11-10 23:00",
        [
            (
                "sora",
                0,
                "ヘルスチェック用に /healthz エンドポイントを追加しました（PR #161）。DB と Discord の接続状態を JSON で返します",
            ),
            ("marco", 4, "Nice, can UptimeRobot use it?"),
            ("sora", 2, "はい、UptimeRobot の監視先を /healthz に切り替えました"),
            ("kenji", 3, "👍 DB の応答時間も返すと便利かもです"),
            ("sora", 1, "次の PR で入れます！"),
        ],
    ),
    (
        "dev",
        "2025-11-12 22:40",
        [
            (
                "kenji",
                0,
                "Slack エクスポートの取り込み、プロトタイプが動きました。thread_ts でスレッドを組み立てて、"
                "<@U…> のメンションは users.json から名前に置き換えてます",
            ),
            ("marco", 4, "Does it read the zip directly, or do people need to unzip it first?", {"label": "zip_q"}),
            ("kenji", 2, "zip のままで読めます！展開したディレクトリでも OK です", {"reply": "zip_q"}),
            ("sora", 3, "本番 VPS のディスクはあと 12GB 空いてるので、大きめのエクスポートも大丈夫そうです"),
        ],
    ),
    (
        "dev",
        "2025-11-14 23:10",
        [
            (
                "daichi",
                0,
                f"#160 の PR を出しました → {REPO}/pull/163 「明日」「あさって」「来週」「next week」に対応しました",
            ),
            ("kenji", 4, "レビューしました！タイムゾーンの扱いだけ直せばマージできそうです"),
            ("daichi", 20, "直しました！ユーザーのタイムゾーン設定（なければ Asia/Tokyo）で解釈するようにしました"),
            ("kenji", 3, "マージしました 🎉 だいちさん、2本目の PR おめでとうございます", {"reactions": [("🎉", 4)]}),
        ],
    ),
    (
        "dev",
        "2025-10-15 22:40",
        [
            ("kenji", 0, "Emily さんのレビューコメント反映しました。docstring を Google スタイルに揃えてます"),
            (
                "emily",
                5,
                "Thanks! One more thing: could the tokenizer be configurable? Some people may want bigrams only.",
            ),
            ("kenji", 3, '設定で切り替えられるようにします。tokenizer = "sudachi" | "bigram" みたいな感じで'),
            ("marco", 2, "Make sure the default is documented in the changelog."),
            ("kenji", 1, "了解です！"),
            ("sora", 6, "ステージング環境（Raspberry Pi）に #145 のブランチを入れて試してみます"),
        ],
    ),
    # ------------------------------------------------------------------- thread
    (
        "release",
        "2025-10-20 21:02",
        [
            (
                "marco",
                0,
                "v0.4.0 release checklist:\n1. Changelog (Marco)\n2. Docs JA/EN + migration guide for Python 3.9 users "
                "(Emily)\n3. #142 Japanese search fix merged (Kenji)\n4. Demo bot upgraded on the VPS (Sora)\n"
                "5. PyPI upload + GitHub release (Marco)\n6. Announcement in #general (Haruka)\n"
                "Target date: Friday October 24.",
                {"label": "checklist"},
            ),
            ("haruka", 3, "ありがとうございます！アナウンス文は日本語と英語の両方で書きますね"),
            ("emily", 2, "Docs are about 70% done. The migration guide will be ready by Wednesday."),
            ("sora", 4, "VPS 側は v0.4.0 のタグが打たれたらすぐ更新できるようにしておきます"),
            ("kenji", 1, "#142 は水曜にはマージできる見込みです"),
        ],
    ),
    (
        "release",
        "2025-10-22 23:30",
        [
            ("emily", 0, f"Docs done ✅ Migration guide: {DOCS}/en/migration/0.4/"),
            ("kenji", 1, "#142 もマージ済みです ✅"),
            ("marco", 3, "Great, the changelog draft is in PR #149."),
        ],
    ),
    (
        "release",
        "2025-10-23 22:45",
        [
            (
                "marco",
                0,
                "Bad news: while testing the release candidate on staging I found a regression. After the bot "
                f"reconnects to Discord, every reminder fires twice. Issue #151: {REPO}/issues/151",
                {"label": "bug151"},
            ),
            ("sora", 2, "あ、それ VPS でも再現しました。昨日の再接続のあと、リマインダーが2回来てました"),
            (
                "kenji",
                3,
                "再接続のたびに on_ready が呼ばれて、スケジューラにジョブが二重登録されてる気がします",
                {"label": "bug151_guess"},
            ),
            (
                "sora",
                4,
                "見ました。on_ready でリマインダーのジョブを毎回 add_job しているのが原因です。"
                "ジョブ ID を固定して replace_existing=True にすれば直るはず",
                {"label": "bug151_cause", "reply": "bug151_guess"},
            ),
            (
                "marco",
                2,
                "OK. I don't want to ship a known regression, so let's postpone the v0.4.0 release from Friday "
                "October 24 to Tuesday October 28. Sora, can you take #151?",
                {"label": "postpone"},
            ),
            ("sora", 1, "了解です、明日直します"),
            ("haruka", 2, "延期了解です！アナウンスも28日に合わせます"),
        ],
    ),
    (
        "release",
        "2025-10-24 21:20",
        [
            (
                "sora",
                0,
                f"#151 の修正 PR を出しました → {REPO}/pull/153 リマインダーのジョブ ID を reminder:<id> で固定して、"
                "再接続しても二重登録されないようにしました。再接続を10回繰り返すテストも追加してます",
                {"label": "fix151"},
            ),
            ("kenji", 5, "レビューしました、LGTM です"),
            ("marco", 3, "Merged. Thanks Sora! Rebuilding the release candidate now."),
        ],
    ),
    (
        "release",
        "2025-10-27 22:00",
        [
            (
                "marco",
                0,
                "Final check before tomorrow: changelog ✅ docs ✅ #142 ✅ #151 ✅ VPS ready ✅. "
                "Only the PyPI upload and the announcement are left.",
            ),
            ("haruka", 2, "アナウンス文の下書きができました。明日リリースしたら #general に出します"),
            ("emily", 1, "The English version of the announcement is ready too."),
            ("marco", 2, "🙌"),
        ],
    ),
    (
        "release",
        "2025-10-28 21:40",
        [
            ("marco", 0, "RC2 has been on staging for 3 days with no double reminders. Going ahead with the release."),
            (
                "marco",
                15,
                "mochi-bot v0.4.0 was released today (October 28): it is on PyPI and the GitHub release is "
                f"published ✅ {REPO}/releases/tag/v0.4.0",
                {"label": "released"},
            ),
            ("sora", 4, "VPS のデモbotも v0.4.0 に更新しました ✅"),
            ("haruka", 3, "アナウンス出します！みなさんお疲れさまでした 🎉"),
            ("kenji", 1, "お疲れさまでした！"),
            ("emily", 2, "🎉🎉"),
        ],
    ),
    # ------------------------------------------------------------------- #random
    (
        "random",
        "2025-10-08 12:20",
        [
            ("yui", 0, "お昼なに食べました？私はコンビニのおにぎり🍙", {"label": "lunch_q"}),
            (
                "kenji",
                2,
                "味噌ラーメンです。札幌出身なので、結局いつも味噌ラーメンに戻ってきます 🍜 一番好きな食べ物です",
                {"label": "kenji_food", "reply": "lunch_q"},
            ),
            (
                "emily",
                3,
                "My favourite food is okonomiyaki, Hiroshima style with extra noodles! I could eat it every week.",
                {"label": "emily_food"},
            ),
            ("marco", 2, "Today I had risotto. I'm in Milan, so that's cheating 😄"),
            ("sora", 4, "自作のスパイスカレーです。最近スパイスの配合にハマってます"),
            ("yui", 2, "みんな美味しそう…私は抹茶アイスがあれば生きていけます"),
            ("aoi", 1, "わかる〜。私は唐揚げ派です"),
            ("haruka", 6, "餃子も忘れないでください 🥟"),
            ("emily", 1, "Okonomiyaki party at the next meetup? 😆"),
            ("aoi", 2, "懇親会のお店、候補に入れておきます笑"),
        ],
    ),
    (
        "random",
        "2025-10-15 22:05",
        [
            ("yui", 0, "", {"label": "logo_image", "attach": [("mochi-logo-v2.png", 183244)]}),
            (
                "yui",
                1,
                "新しいロゴ案です！のびるお餅のイメージで、色は桜色（#F7C6D0）にしました 🍡",
                {"label": "logo_text", "reactions": [("😍", 5), ("🍡", 3)]},
            ),
            ("emily", 2, "Oh that's so cute!! Love the stretchy mochi."),
            ("haruka", 1, "かわいい〜！これでいきましょう"),
            ("marco", 3, "Great work Yui. Can we get an SVG version for the docs header?"),
            ("yui", 2, "SVG も書き出しておきます！ステッカー用の版も作る予定です"),
            ("kenji", 4, "ステッカー、もくもく会で配れたら良さそう"),
            ("aoi", 1, "それいいですね！印刷代も予算に入れます"),
        ],
    ),
    (
        "random",
        "2025-10-18 16:40",
        [
            (
                "sora",
                0,
                "うちの猫（こむぎ）がキーボードの上で寝てて作業できない",
                {"attach": [("komugi.jpg", 412877)]},
            ),
            ("yui", 1, "かわいすぎる…こむぎちゃん🐈"),
            ("haruka", 2, "今日は作業しなくていいという合図では"),
            ("emily", 3, "Komugi is the real maintainer here."),
            ("sora", 2, "完全に PR レビューしてる顔ですね"),
        ],
    ),
    (
        "random",
        "2025-10-22 12:40",
        [
            ("marco", 0, "Question for the Japan folks: where do you buy good coffee beans?"),
            ("kenji", 3, "近所の焙煎所で買ってます。浅煎りが好きです"),
            ("sora", 2, "カルディで済ませてます笑"),
            ("yui", 4, "私はコーヒーが飲めないのでほうじ茶派です🍵"),
            ("marco", 2, "Hojicha latte is actually great, I had one last time I was in Tokyo."),
            ("aoi", 3, "わかる〜ほうじ茶ラテ最高"),
        ],
    ),
    (
        "random",
        "2025-10-25 11:30",
        [
            (
                "marco",
                0,
                "Personal news: I'm visiting Tokyo from December 3 to December 10! Any recommendations?",
                {"label": "marco_trip"},
            ),
            ("haruka", 2, "えー！ようこそ！浅草と谷中あたりの散歩がおすすめです"),
            ("kenji", 3, "ラーメン行きましょう。味噌のうまい店を知ってます"),
            ("emily", 2, "Come to Kyoto for a day trip! The autumn leaves might still be there in early December."),
            ("yui", 4, "12月上旬なら神宮外苑のいちょう並木もまだ見られるかもです"),
            ("marco", 3, "Writing all of this down 📝 Thank you!"),
            ("aoi", 2, "滞在中にオフ会しましょう〜"),
        ],
    ),
    (
        "random",
        "2025-10-29 21:30",
        [
            ("yui", 0, "ステッカーを入稿しました！100枚で 4,800円でした"),
            ("aoi", 2, "ありがとうございます！予算から精算しますね"),
            ("yui", 1, "領収書はあとで送ります〜"),
            ("haruka", 3, "届くの楽しみ！"),
            ("emily", 2, "Can I get a few to send to friends in the UK? 😄"),
            ("yui", 1, "もちろんです！"),
        ],
    ),
    (
        "random",
        "2025-11-02 20:10",
        [
            ("daichi", 0, "研究の締め切りが近くて寝不足です…"),
            ("kenji", 2, "無理しないでくださいね"),
            ("yui", 3, "締め切り前のエナジードリンクはほどほどに…"),
            ("daichi", 2, "ほどほどにします😇"),
            ("emily", 5, "Tip: a pomodoro timer and a pot of tea. Works for me when I translate long pages."),
            ("daichi", 1, "試してみます！"),
        ],
    ),
    (
        "random",
        "2025-11-09 14:00",
        [
            (
                "haruka",
                0,
                "高尾山に行ってきました！紅葉はまだ半分くらいでした",
                {"attach": [("takao-2025-11-09.jpg", 655120)]},
            ),
            ("aoi", 4, "きれい〜！来週あたりが見頃かな"),
            ("sora", 3, "人多くなかったですか？"),
            ("haruka", 2, "ケーブルカーは30分待ちでした笑"),
            ("marco", 5, "Beautiful! Adding Takao to my list."),
        ],
    ),
    (
        "random",
        "2025-11-13 22:30",
        [
            ("emily", 0, "Update: I found an okonomiyaki place in Shibuya, 5 minutes from the meetup venue 😋"),
            ("aoi", 2, "懇親会は「とりまる」で予約しちゃいました…！次回の候補にします笑"),
            ("emily", 1, "Haha no problem, next time!"),
        ],
    ),
    (
        "random",
        "2025-11-15 22:30",
        [
            (
                "aoi",
                0,
                "懇親会の写真です！みなさんありがとうございました〜",
                {"attach": [("torimaru-1115.jpg", 598341)]},
            ),
            ("emily", 2, "Best night! The tsukune was amazing."),
            ("daichi", 3, "楽しすぎました…！来月も参加します"),
            ("kenji", 2, "味噌ラーメンで締めるのは無理でした笑"),
            ("yui", 4, "また行きましょう〜"),
        ],
    ),
    (
        "random",
        "2025-10-11 18:00",
        [
            ("yui", 0, "週末なにしてます？私は美術館に行ってきました🎨"),
            ("sora", 4, "ひたすら部屋の掃除してました…"),
            ("emily", 3, "I went hiking in Arashiyama. Very crowded but beautiful."),
            ("kenji", 5, "ボルダリング行ってきました。腕がもう上がらないです"),
            ("marco", 2, "Football match here in Milan. We lost 😭"),
            ("aoi", 3, "みんなアクティブ…私は家でゲームしてました🎮"),
        ],
    ),
    (
        "random",
        "2025-11-07 19:30",
        [
            ("sora", 0, "こむぎ、今日はサーバーラックの上で寝てます。排熱で暖かいらしい"),
            ("yui", 2, "賢い…！"),
            ("kenji", 3, "VPS に移してなかったら Raspberry Pi が猫用ヒーターになってましたね"),
            ("emily", 4, "Komugi approves of the infrastructure 😂"),
            ("sora", 2, "監視対象に猫を追加しました（冗談です）"),
        ],
    ),
    # ----------------------------------------------------------------- #イベント
    (
        "event",
        "2025-10-09 21:30",
        [
            ("aoi", 0, "11/15(土) もくもく会の会場候補です！"),
            (
                "aoi",
                0.5,
                "① Hive Shibuya 7F イベントスペース（渋谷駅から徒歩4分、最大30人、半日 15,000円、Wi-Fi・プロジェクターあり）",
            ),
            ("aoi", 0.5, "② Base Akiba（秋葉原駅から徒歩2分、最大20人、半日 10,000円、全席電源あり）"),
            ("haruka", 3, "参加予定が20人くらいなので①が安心かもですね"),
            ("kenji", 2, "LT をやるならプロジェクター必須なので①に一票"),
            ("emily", 4, "Shibuya is also easier for people coming from outside Tokyo."),
            ("marco", 2, "I'll join online, so either is fine for me 😄 Just make sure there's a stream."),
            ("aoi", 3, "オンライン配信も考えておきます！"),
        ],
    ),
    (
        "event",
        "2025-10-10 19:45",
        [
            (
                "aoi",
                0,
                "11/15 のもくもく会の会場は Hive Shibuya 7F イベントスペースに決定しました！予約済みです 🎉 "
                "住所：東京都渋谷区道玄坂1-2-3 ハイブ渋谷ビル7F",
                {"label": "venue_decision", "reactions": [("🎉", 6)]},
            ),
            (
                "haruka",
                2,
                "📣 もくもく会のお知らせ：11/15(土) 13:30 開場、14:00 開始、18:00 終了です。定員25名、参加費 500円"
                "（ドリンク代）。申し込みは connpass から → https://omoide-lab.connpass.com/event/331205/",
                {"label": "meetup_time", "edited": 35, "pinned": True},
            ),
            ("haruka", 1, "Pinned a message.", {"type": "ChannelPinnedMessage", "ref": "meetup_time"}),
            ("emily", 3, "Registered! ✅"),
            ("kenji", 1, "登録しました"),
            ("yui", 4, "登録しました〜。ステッカーも間に合わせます！"),
        ],
    ),
    (
        "event",
        "2025-10-20 20:00",
        [
            ("aoi", 0, "connpass のイベントページを公開しました！もう8名申し込んでくれてます 🎉"),
            ("haruka", 3, "はやい！告知ありがとうございます"),
            ("yui", 2, "X（Twitter）でも告知しておきますね"),
            ("marco", 6, "Shared it in an Italian Python community too. Someone from Osaka might join online!"),
            ("aoi", 2, "ありがとうございます〜！"),
        ],
    ),
    (
        "event",
        "2025-11-04 21:00",
        [
            ("aoi", 0, "もくもく会まであと10日！現在の申し込みは18名/25名です"),
            ("haruka", 2, "いい感じですね！LT 枠はどうしましょう"),
            ("aoi", 1, "3枠×10分くらいを考えてます。話したい人いますか？", {"label": "lt_q"}),
            ("kenji", 2, "「SudachiPy で日本語検索を直した話」で出ます", {"reply": "lt_q"}),
            ("emily", 3, 'I\'ll do one: "Translating docs without losing your mind" 😄'),
            ("daichi", 6, "あの、もし枠があれば「初めての OSS コントリビュート」で話してみたいです…！"),
            ("haruka", 1, "3枠埋まりましたね！Kenji さん、Emily さん、だいちさんの順でいきましょう"),
            ("daichi", 1, "がんばります！"),
        ],
    ),
    (
        "event",
        "2025-11-06 22:15",
        [
            ("marco", 0, "Any decision on the stream for remote people?"),
            ("aoi", 3, "YouTube Live と Discord のステージチャンネルで迷ってます"),
            (
                "sora",
                2,
                "Discord なら配信中にそのままチャットで質問できるのでおすすめです。機材は私のカメラとマイクを持っていきます",
            ),
            (
                "haruka",
                3,
                "ではオンライン参加は Discord のステージチャンネル「もくもくステージ」で配信、で決定です！そらさん機材ありがとうございます",
                {"label": "stream_decision"},
            ),
            ("marco", 1, "Perfect 👍"),
            (
                "aoi",
                5,
                "おやつと飲み物は私が買っていきます。予算は 6,000円で、お菓子とお茶・コーヒーを用意します☕ "
                "アレルギーがある人は DM ください",
                {"label": "snacks"},
            ),
        ],
    ),
    (
        "event",
        "2025-11-10 21:20",
        [
            (
                "aoi",
                0,
                "懇親会のお店を予約しました！会場近くの居酒屋「とりまる」で 18:30 から、予算は一人 3,500円です。"
                "いまのところ12名の予定です",
                {"label": "afterparty"},
            ),
            ("kenji", 3, "参加します！"),
            ("emily", 1, "Count me in 🍻"),
            ("yui", 2, "参加です〜"),
            ("daichi", 2, "学生でも大丈夫ですか…？", {"label": "student_q"}),
            ("aoi", 1, "もちろんです！学生さんは 2,000円にします 🙌", {"reply": "student_q"}),
            ("daichi", 1, "ありがとうございます！参加します！"),
        ],
    ),
    (
        "event",
        "2025-11-11 22:00",
        [
            ("haruka", 0, "オンライン参加の人向けに、ステージチャンネルは当日 13:45 から開けます"),
            ("marco", 2, "👍 13:45 JST is 5:45 in Milan, I'll set three alarms 😂"),
            ("emily", 3, "Marco's dedication 🙏"),
            ("sora", 2, "配信テストを金曜の夜にやりたいので、誰か付き合ってもらえますか？"),
            ("kenji", 1, "付き合います！"),
        ],
    ),
    (
        "event",
        "2025-11-12 20:00",
        [
            (
                "aoi",
                0,
                "会場の地図です。ビルの入口がちょっとわかりにくいので、1階のコンビニの横のエレベーターで7階まで上がってください",
                {"label": "map", "attach": [("hive-shibuya-map.pdf", 248113)]},
            ),
            (
                "mochibot",
                5,
                "⏰ リマインダーを設定しました: 11/14(金) 20:00 に #イベント で「明日はもくもく会です！」を通知します",
                {"interaction": ("remind", "aoi")},
            ),
            ("haruka", 2, "助かります〜"),
        ],
    ),
    (
        "event",
        "2025-11-14 20:00",
        [
            (
                "mochibot",
                0,
                "⏰ リマインダー: 明日はもくもく会です！13:30 開場 @ Hive Shibuya 7F。持ち物：ノートPC、電源タップ（あれば）",
            ),
            ("haruka", 2, "いよいよ明日ですね！現地の方は気をつけて来てください"),
            ("aoi", 3, "受付は私がやります。connpass の受付票を見せてください〜"),
            ("emily", 2, "See you tomorrow! 🎉"),
            ("marco", 4, "I'll be on the stage channel from Milan. It will be 6am here 😅"),
        ],
    ),
    (
        "event",
        "2025-11-15 13:05",
        [
            ("aoi", 0, "会場に着きました！設営中です"),
            ("sora", 3, "配信機材をセットしました。ステージチャンネルでテスト配信を始めます"),
            ("marco", 2, "I can see and hear you! 👋"),
            ("yui", 15, "ステッカー持ってきました！受付で配ってます 🍡", {"attach": [("mochi-stickers.jpg", 501223)]}),
            ("haruka", 20, "14:00 になったので始めます！"),
            ("kenji", 80, "LT の資料です → https://omoide-lab.github.io/slides/sudachi-search/"),
            ("daichi", 30, "LT 終わりました…！緊張した〜"),
            ("emily", 2, "You did great, Daichi!"),
            (
                "haruka",
                130,
                "おつかれさまでした！懇親会組はとりまるへ移動しましょう 🍻",
                {"attach": [("mokumoku-1115.jpg", 734502)]},
            ),
        ],
    ),
    (
        "event",
        "2025-11-16 11:00",
        [
            ("aoi", 0, "アンケートのお願いです！connpass のイベントページからお答えください（11/22 締切）"),
            ("haruka", 3, "会場は広さも Wi-Fi もちょうどよかったので、次回もここが第一候補ですね"),
            ("aoi", 2, "次回も Hive Shibuya を押さえられるか聞いてみます"),
            ("emily", 3, "The stage stream worked really well too. Marco said the audio was clear."),
            ("sora", 2, "配信の録画は YouTube に限定公開で上げておきます"),
        ],
    ),
]

# Questions a user could ask, with the labels of the messages that answer them and a
# fragment the first answering message must contain.
QUESTIONS: list[dict[str, Any]] = [
    {
        "lang": "ja",
        "question": "11月のもくもく会の会場はどこ？",
        "answer": "Hive Shibuya 7F イベントスペース（渋谷）",
        "labels": ["venue_decision"],
        "expect": "Hive Shibuya",
    },
    {
        "lang": "ja",
        "question": "もくもく会は何時に開場する？",
        "answer": "13:30 開場（14:00 開始）",
        "labels": ["meetup_time"],
        "expect": "13:30 開場",
    },
    {
        "lang": "en",
        "question": "When was mochi-bot v0.4.0 released?",
        "answer": "On 28 October 2025",
        "labels": ["released", "release_announce", "bot_release"],
        "expect": "October 28",
    },
    {
        "lang": "en",
        "question": "Why was the v0.4.0 release postponed?",
        "answer": "A regression (#151): reminders fired twice after the bot reconnected; postponed from 24 to 28 October",
        "labels": ["postpone", "bug151"],
        "expect": "postpone",
    },
    {
        "lang": "ja",
        "question": "日本語で検索すると0件になるバグの原因は？",
        "answer": "トークナイザが空白でしか分割しておらず、日本語の文が1トークンになっていた",
        "labels": ["bug142_cause"],
        "expect": "空白でしか",
    },
    {
        "lang": "ja",
        "question": "#142 の日本語検索のバグはどうやって直した？",
        "answer": "PR #145 で SudachiPy（分割モードC）による形態素解析に変更し、辞書がない環境では文字 bigram にフォールバック",
        "labels": ["fix145_merged", "bug142_decision"],
        "expect": "SudachiPy",
    },
    {
        "lang": "en",
        "question": "Who is responsible for the documentation and translation?",
        "answer": "Emily",
        "labels": ["emily_docs", "roles"],
        "expect": "docs and the translation",
    },
    {
        "lang": "ja",
        "question": "Kenji さんの一番好きな食べ物は？",
        "answer": "味噌ラーメン",
        "labels": ["kenji_food"],
        "expect": "味噌ラーメン",
    },
    {
        "lang": "en",
        "question": "What is Emily's favourite food?",
        "answer": "Okonomiyaki (Hiroshima style)",
        "labels": ["emily_food"],
        "expect": "okonomiyaki",
    },
    {
        "lang": "en",
        "question": "Which Python versions does v0.4.0 support?",
        "answer": "Python 3.10 to 3.13 (3.9 was dropped)",
        "labels": ["py_versions"],
        "expect": "3.10, 3.11, 3.12 and 3.13",
    },
    {
        "lang": "ja",
        "question": "デモ用のボットはどこで動いている？",
        "answer": "さくらのVPS 2GB プラン（石狩リージョン）。以前は自宅の Raspberry Pi 4",
        "labels": ["vps_done"],
        "expect": "さくらのVPS",
    },
    {
        "lang": "en",
        "question": "When is the v0.5 feature freeze?",
        "answer": "Friday 21 November 2025 (release on 5 December)",
        "labels": ["v05_schedule", "v05_decision"],
        "expect": "feature freeze on Friday November 21",
    },
    {
        "lang": "ja",
        "question": "懇親会の予算は一人いくら？",
        "answer": "一人 3,500円（学生は 2,000円）",
        "labels": ["afterparty"],
        "expect": "3,500円",
    },
    {
        "lang": "ja",
        "question": "新しいロゴ案は誰が作った？",
        "answer": "ゆいさん（桜色ののびるお餅）",
        "labels": ["logo_text", "logo_image"],
        "expect": "新しいロゴ案",
    },
    {
        "lang": "en",
        "question": "When is Marco visiting Tokyo?",
        "answer": "From 3 to 10 December",
        "labels": ["marco_trip"],
        "expect": "December 3 to December 10",
    },
]
