"""Verify the Japanese retrieval questions against the RealPersonaChat sample.

Usage:
    python benchmarks/data/verify_ja_questions.py [--questions PATH] [--dialogues PATH] [--json]

Checks, each failure printed with the question id (exit status 1 if any fails):

- every item has the required fields with the right types; ids are ``ja-0001``… in order;
  ``pair`` is one of the sample's nine pairs and ``speaker`` one of its two ids;
- every evidence reference exists: the dialogue belongs to that pair and has that utterance;
- at least one evidence utterance is spoken by ``speaker`` (the person the fact is about);
- ``category`` matches the shape of the evidence: ``multi-session`` spans two or more
  dialogues, ``single-hop`` stays within six consecutive utterances of one dialogue,
  ``multi-hop`` is one dialogue with evidence further apart; ``temporal`` questions name a
  date or the pair's first conversation, and that date or first dialogue is in the evidence;
- ``confusable_with`` (optional) points, symmetrically, at existing items about a similar fact
  of another pair (scoping) or of the other speaker of the same pair (speaker attribution).

Then it measures how lexical the questions are: the share of a question's character
bigrams (speaker ids, punctuation and spaces removed, NFKC-normalised) that also occur in
its evidence utterances, against the same share for random utterance sets of the same pair
and size (seeded), and the longest substring a question shares with its evidence. The
evidence must only be the place the fact is stated, not a copy of the question.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTIONS = HERE / "ja_retrieval_questions.json"
DEFAULT_DIALOGUES = HERE.parents[2] / "shared" / "data" / "ja" / "realpersonachat_sample_dialogues.json"

PAIRS = {"AD-EY", "AW-FT", "ED-EK", "FK-FR", "GN-GU", "GU-GW", "GU-HE", "GW-HE", "GW-HR"}
CATEGORIES = {"single-hop", "multi-hop", "temporal", "multi-session"}
SINGLE_HOP_SPAN = 5  # utterance ids at most this far apart: one short exchange
RANDOM_SAMPLES = 50
DATE_RE = re.compile(r"(\d{1,2})月(\d{1,2})日")
DATE_SESSION_RE = re.compile(r"(\d{1,2})月(\d{1,2})日[^、。（）]{0,6}の会話")
FIRST_RE = re.compile(r"初めて話した|最初に話した|最初の会話")
NAME_RE = re.compile(r"[A-Z]{2}さん")
STRIP_RE = re.compile(r"[\s\W_]+")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = NAME_RE.sub("", text)
    return STRIP_RE.sub("", text)


def bigrams(text: str) -> set[str]:
    t = normalise(text)
    return {t[i : i + 2] for i in range(len(t) - 1)}


def containment(question: set[str], texts: Iterable[str]) -> float:
    if not question:
        return 0.0
    pool: set[str] = set()
    for t in texts:
        pool |= bigrams(t)
    return len(question & pool) / len(question)


def longest_common_substring(a: str, b: str) -> int:
    best = 0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0] * (len(b) + 1)
        for j, cb in enumerate(b, 1):
            if ca == cb:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def load_dialogues(path: Path) -> dict[int, dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return {int(d["dialogue_id"]): d for d in json.load(f)}


def pair_of(dialogue: dict[str, Any]) -> str:
    return "-".join(sorted(dialogue["interlocutors"]))


def session_dates(dialogue: dict[str, Any]) -> set[tuple[int, int]]:
    dates = set()
    for u in dialogue["utterances"]:
        ts = u["timestamp"]
        if ts != "NaT":
            dates.add((int(ts[5:7]), int(ts[8:10])))
    return dates


def check(questions: list[dict[str, Any]], dialogues: dict[int, dict[str, Any]]) -> list[str]:
    errors: list[str] = []
    by_pair: dict[str, list[dict[str, Any]]] = {}
    for d in dialogues.values():
        by_pair.setdefault(pair_of(d), []).append(d)
    first_dialogue = {
        p: min(ds, key=lambda d: next(u["timestamp"] for u in d["utterances"] if u["timestamp"] != "NaT"))[
            "dialogue_id"
        ]
        for p, ds in by_pair.items()
    }
    ids = {q.get("id") for q in questions}
    owner_by_id = {q.get("id"): (q.get("pair"), q.get("speaker")) for q in questions}
    for n, q in enumerate(questions, 1):
        qid = q.get("id", f"#{n}")
        problems: list[str] = []
        for key, typ in (("id", str), ("pair", str), ("speaker", str), ("question", str), ("answer", str)):
            if not isinstance(q.get(key), typ) or not q.get(key):
                problems.append(f"field {key!r} missing or not a non-empty {typ.__name__}")
        if q.get("id") != f"ja-{n:04d}":
            problems.append(f"id should be ja-{n:04d}")
        if q.get("pair") not in PAIRS:
            problems.append(f"unknown pair {q.get('pair')!r}")
        elif q.get("speaker") not in q["pair"].split("-"):
            problems.append(f"speaker {q.get('speaker')!r} is not in pair {q['pair']}")
        if q.get("category") not in CATEGORIES:
            problems.append(f"unknown category {q.get('category')!r}")
        evidence = q.get("evidence")
        if not isinstance(evidence, list) or not evidence:
            problems.append("evidence must be a non-empty list")
            evidence = []
        refs: list[tuple[int, int]] = []
        for e in evidence:
            did, uid = (e.get("dialogue_id"), e.get("utterance_id")) if isinstance(e, dict) else (None, None)
            if not isinstance(did, int) or not isinstance(uid, int):
                problems.append(f"bad evidence entry {e!r}")
                continue
            dia = dialogues.get(did)
            if dia is None:
                problems.append(f"dialogue {did} does not exist")
            elif pair_of(dia) != q.get("pair"):
                problems.append(f"dialogue {did} belongs to {pair_of(dia)}, not {q.get('pair')}")
            elif not 0 <= uid < len(dia["utterances"]) or dia["utterances"][uid]["utterance_id"] != uid:
                problems.append(f"dialogue {did} has no utterance {uid}")
            else:
                refs.append((did, uid))
        if len(set(refs)) != len(refs):
            problems.append("duplicate evidence reference")
        if refs and problems == []:
            speakers = {dialogues[d]["utterances"][u]["interlocutor_id"] for d, u in refs}
            if q["speaker"] not in speakers:
                problems.append(f"no evidence utterance is spoken by {q['speaker']}")
            dids = {d for d, _ in refs}
            span = max(u for _, u in refs) - min(u for _, u in refs)
            cat = q["category"]
            if cat == "multi-session" and len(dids) < 2:
                problems.append("multi-session evidence must span two or more dialogues")
            if cat in ("single-hop", "multi-hop") and len(dids) != 1:
                problems.append(f"{cat} evidence must stay in one dialogue (use multi-session)")
            if cat == "single-hop" and len(dids) == 1 and span > SINGLE_HOP_SPAN:
                problems.append(f"single-hop evidence spans {span + 1} utterances (use multi-hop)")
            if cat == "multi-hop" and len(dids) == 1 and span <= SINGLE_HOP_SPAN:
                problems.append("multi-hop evidence is one short exchange (use single-hop)")
            if cat == "temporal":
                text = q["question"] + " " + q["answer"]
                named = {(int(m), int(d)) for m, d in DATE_RE.findall(q["question"])}
                named |= {(int(m), int(d)) for m, d in DATE_SESSION_RE.findall(q["answer"])}
                evidence_dates: set[tuple[int, int]] = set()
                for did_ in dids:
                    evidence_dates |= session_dates(dialogues[did_])
                if not named and not FIRST_RE.search(text) and not DATE_RE.search(q["answer"]):
                    problems.append("temporal question names no date and no first conversation")
                for md in sorted(named - evidence_dates):
                    problems.append(f"date {md[0]}月{md[1]}日 is not the date of any evidence dialogue")
                if FIRST_RE.search(q["question"]) and first_dialogue[q["pair"]] not in dids:
                    problems.append(f"'first conversation' but dialogue {first_dialogue[q['pair']]} is not in evidence")
        conf = q.get("confusable_with", [])
        if not isinstance(conf, list):
            problems.append("confusable_with must be a list")
            conf = []
        for other in conf:
            if other not in ids:
                problems.append(f"confusable_with names unknown id {other!r}")
            elif owner_by_id[other] == (q.get("pair"), q.get("speaker")):
                problems.append(f"confusable_with {other} is about the same speaker of the same pair")
            else:
                back = next(x for x in questions if x.get("id") == other).get("confusable_with", [])
                if qid not in back:
                    problems.append(f"confusable_with {other} is not symmetric")
        errors += [f"{qid}: {p}" for p in problems]
    if len(ids) != len(questions):
        errors.append("duplicate ids")
    return errors


def lexical_report(
    questions: list[dict[str, Any]], dialogues: dict[int, dict[str, Any]], seed: int = 0
) -> dict[str, Any]:
    rnd = random.Random(seed)
    pool: dict[str, list[str]] = {}
    for d in dialogues.values():
        pool.setdefault(pair_of(d), []).extend(u["text"] for u in d["utterances"])
    ev_all, ev_spk, rand, lcs, worst = [], [], [], [], []
    for q in questions:
        qb = bigrams(q["question"])
        utts = [dialogues[e["dialogue_id"]]["utterances"][e["utterance_id"]] for e in q["evidence"]]
        texts = [u["text"] for u in utts]
        own = [u["text"] for u in utts if u["interlocutor_id"] == q["speaker"]]
        c_all = containment(qb, texts)
        ev_all.append(c_all)
        ev_spk.append(containment(qb, own))
        rand.append(
            statistics.fmean(containment(qb, rnd.sample(pool[q["pair"]], len(texts))) for _ in range(RANDOM_SAMPLES))
        )
        nq = normalise(q["question"])
        lcs.append(max(longest_common_substring(nq, normalise(t)) for t in texts))
        worst.append((c_all, q["id"]))
    worst.sort(reverse=True)
    return {
        "questions": len(questions),
        "bigram_containment_evidence_mean": round(statistics.fmean(ev_all), 3),
        "bigram_containment_evidence_median": round(statistics.median(ev_all), 3),
        "bigram_containment_speaker_turns_mean": round(statistics.fmean(ev_spk), 3),
        "bigram_containment_random_same_pair_mean": round(statistics.fmean(rand), 3),
        "share_questions_containment_ge_0.5": round(sum(c >= 0.5 for c in ev_all) / len(ev_all), 3),
        "longest_shared_substring_mean_chars": round(statistics.fmean(lcs), 2),
        "longest_shared_substring_max_chars": max(lcs),
        "most_lexical": [f"{i} {c:.2f}" for c, i in worst[:5]],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    ap.add_argument("--dialogues", type=Path, default=DEFAULT_DIALOGUES)
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    try:
        with args.questions.open(encoding="utf-8") as f:
            questions = json.load(f)
        dialogues = load_dialogues(args.dialogues)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"cannot load input: {exc}", file=sys.stderr)
        return 2
    if not isinstance(questions, list):
        print("questions file must hold a JSON list", file=sys.stderr)
        return 1
    errors = check(questions, dialogues)
    counts: dict[str, dict[str, int]] = {}
    for q in questions:
        row = counts.setdefault(str(q.get("pair")), {})
        row[str(q.get("category"))] = row.get(str(q.get("category")), 0) + 1
    report: dict[str, Any] = {"errors": errors, "counts": counts}
    if not errors:
        report["lexical"] = lexical_report(questions, dialogues)
        report["confusable_items"] = sum(bool(q.get("confusable_with")) for q in questions)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        for e in errors:
            print(f"ERROR {e}")
        cats = sorted(CATEGORIES)
        print(f"{'pair':8}" + "".join(f"{c:>14}" for c in cats) + f"{'total':>8}")
        for pair in sorted(counts):
            row = counts[pair]
            print(f"{pair:8}" + "".join(f"{row.get(c, 0):>14}" for c in cats) + f"{sum(row.values()):>8}")
        tot = {c: sum(r.get(c, 0) for r in counts.values()) for c in cats}
        print(f"{'all':8}" + "".join(f"{tot[c]:>14}" for c in cats) + f"{sum(tot.values()):>8}")
        if "lexical" in report:
            print(f"confusable items: {report['confusable_items']}")
            for k, v in report["lexical"].items():
                print(f"{k}: {v}")
        print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
