"""BM25 over PostgreSQL full-text matches, in one query (knowledge chunks and memories).

``ts_rank_cd`` has no inverse document frequency: a row that repeats a common word outranks
one with the rare word the question is about (LoCoMo lexical Recall@10 0.368 with
``ts_rank_cd`` against 0.587 with this ranking and 0.611 with SQLite FTS5's BM25;
``docs/benchmarks.md``). The query:

1. ``bm25_m``: the rows matching any token (``tsv @@ $or``, served by the GIN index) that
   pass the caller's filters, each with its length (distinct lexemes) and, per token, whether
   it contains it (``tsv @@ token``);
2. ``bm25_w``: per token, its document frequency among those rows (a window count), and the
   average length;
3. ``bm25_n``: the collection size, the planner's row estimate of the table
   (``pg_class.reltuples``, at least the number of matches: a table not analysed yet says -1;
   it only enters through a logarithm);
4. score = ``Σ idf(t) · (k1 + 1) / (1 + k1 · (1 − b + b · len / avglen))`` over the tokens a
   row contains, ``idf = ln(1 + (N − df + 0.5) / (df + 0.5))``; best first, ties by lower id.

A token counts once per row: chat chunks and memories rarely repeat a content word, and
reading term frequencies out of a ``tsvector`` per row costs more than it brings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

BM25_K1 = 1.2
BM25_B = 0.75
"""BM25's term-frequency saturation and length normalisation (the usual values; FTS5's too)."""
MAX_SCORED_TERMS = 32
"""Distinct query tokens that are scored (a longer query's further tokens are ignored)."""


def tsquery_text(tokens: Sequence[str]) -> str:
    """A ``to_tsquery`` input matching any token: each a quoted lexeme (``'`` doubled, ``\\`` escaped), ``|``-joined."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in tokens)


def scored_terms(tokens: Sequence[str]) -> list[str]:
    """The distinct tokens that are scored, in query order."""
    return list(dict.fromkeys(tokens))[:MAX_SCORED_TERMS]


def bm25_sql(
    *, from_: str, table: str, alias: str, columns: str, where: str, args: list[Any], terms: Sequence[str], k: int
) -> str:
    """The ranking query over the rows of ``from_`` (``table`` as ``alias``, with any joins the
    filters need) passing ``where``; returns ``columns`` and ``score``.

    ``args`` holds the parameters ``where`` refers to; the tokens' and ``k``'s are appended.
    """
    tsv = f"{alias}.lexical_tsv"
    args.append(tsquery_text(terms))
    match = f"${len(args)}"
    has = []
    for i, term in enumerate(terms):
        args.append(tsquery_text([term]))
        has.append(f"{tsv} @@ to_tsquery('simple', ${len(args)}) AS bm25_h{i}")
    args.append(k)
    df = ", ".join(f"count(*) FILTER (WHERE bm25_h{i}) OVER () AS bm25_df{i}" for i in range(len(terms)))
    idf = " + ".join(
        f"CASE WHEN bm25_h{i} THEN ln(1 + (bm25_n.docs - bm25_df{i} + 0.5) / (bm25_df{i} + 0.5)) ELSE 0 END"
        for i in range(len(terms))
    )
    return (
        f"WITH bm25_m AS (SELECT {columns}, length({tsv}) AS bm25_dl, {', '.join(has)} "
        f"FROM {from_} WHERE {tsv} @@ to_tsquery('simple', {match}) AND {where}), "
        f"bm25_w AS (SELECT bm25_m.*, {df}, avg(bm25_dl) OVER () AS bm25_avgdl FROM bm25_m), "
        f"bm25_n AS (SELECT greatest((SELECT reltuples FROM pg_class WHERE oid = '{table}'::regclass), "
        "(SELECT count(*) FROM bm25_m), 1)::float8 AS docs) "
        f"SELECT bm25_w.*, ({idf}) * {BM25_K1 + 1} / "
        f"(1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * bm25_w.bm25_dl / greatest(bm25_w.bm25_avgdl, 1))) AS score "
        f"FROM bm25_w, bm25_n ORDER BY score DESC, bm25_w.id LIMIT ${len(args)}"
    )


__all__ = ["BM25_B", "BM25_K1", "MAX_SCORED_TERMS", "bm25_sql", "scored_terms", "tsquery_text"]
