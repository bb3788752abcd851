"""BM25 over PostgreSQL full-text matches, in one query (knowledge chunks and memories).

``ts_rank_cd`` has no inverse document frequency: a row that repeats a common word outranks
one with the rare word the question is about (LoCoMo lexical Recall@10 0.368 with
``ts_rank_cd`` against 0.587 with this ranking and 0.611 with SQLite FTS5's BM25;
``docs/benchmarks.md``). The query:

1. ``bm25_q``: the tsqueries, parsed once;
2. ``bm25_m``: the rows matching any token (``tsv @@ $or``, served by the GIN index) that
   pass the caller's filters, each with its length (distinct lexemes) and, per token, whether
   it contains it (``tsv @@ token``);
3. ``bm25_s`` / ``bm25_t`` (one row): per token, its document frequency among those rows
   and its IDF, ``ln(1 + (N − df + 0.5) / (df + 0.5))``, and the average length. N is the
   planner's row estimate of the table (``pg_class.reltuples``, at least the number of
   matches: a table not analysed yet says -1; it only enters through a logarithm);
4. score = ``Σ idf(t) · (k1 + 1) / (1 + k1 · (1 − b + b · len / avglen))`` over the tokens a
   row contains; best first, ties by lower id.

A token counts once per row: chat chunks and memories rarely repeat a content word, and
reading term frequencies out of a ``tsvector`` per row costs more than it brings.

Every match is read and scored (~5 µs each), so a query with a common word pays for all of
its rows: at 1M chunks the two words of a query matched 2.1k chunks at the median and 12.7k
at p95 (``docs/benchmarks.md``). When the planner's lexeme statistics
(``pg_stats.most_common_elems``, read by :func:`lexeme_stats`) say the words match more than
:data:`PRUNE_ABOVE` rows, the rarest words drive the candidates (:func:`common_terms`): all
their matches are scored as before, the common words still add to those rows' scores (with
their estimated document frequency), and only a sample of the rows that hold nothing but
common words is scored — MaxScore-style pruning. A common word's IDF is small, so those
rows seldom reach the top of the list; the sample keeps the list's tail filled, and is
read only when the driving words' matches do not fill the list by themselves. A common word's
bit in a driving row comes from the GIN index too (the rows holding it *and* a driving word,
:func:`_matches_by_term`), not from reading the row's ``tsvector`` again: at 1M chunks that took
the buffers a lexical ranking touches from 5,457 to 2,005 on average (20,708 to 4,235 at p95).

The IDFs are computed once, in a one-row CTE, and the per-row arithmetic is ``float8``:
at 1M chunks these two changes and the conditional sample took the ranking's p95 from
15.4 to ~11 ms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from omoide.errors import InvalidInput
from omoide.stores.postgres.citus import local_shards_sql

BM25_K1 = 1.2
BM25_B = 0.75
"""BM25's term-frequency saturation and length normalisation (the usual values; FTS5's too)."""
MAX_SCORED_TERMS = 32
"""Distinct query tokens that are scored (a longer query's further tokens are ignored)."""
PRUNE_ABOVE = 5_000
"""Estimated matching rows above which the commonest words stop driving the candidates."""
DRIVING_ROWS = 4_000
"""Estimated rows the rarest words may match together and still all be scored."""
COMMON_SAMPLE = 200
"""Rows holding only common words that are scored as well (the tail of the list)."""


def tsquery_text(tokens: Sequence[str]) -> str:
    """A ``to_tsquery`` input matching any token: each a quoted lexeme (``'`` doubled, ``\\`` escaped), ``|``-joined."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in tokens)


def has_lexeme(token: str) -> bool:
    """Whether the ``simple`` configuration can make a lexeme of ``token``: one with a letter, a
    digit or any non-ASCII character. Only ASCII punctuation and spaces parse to nothing."""
    return any(ch.isalnum() or not ch.isascii() for ch in token)


def scored_terms(tokens: Sequence[str]) -> list[str]:
    """The distinct tokens that are scored, in query order; those that can match no row
    (no lexeme: ``^``, ``()``) are left out. Their ``tsquery`` would be empty, which matches
    nothing on one server but which Citus cannot ship to a worker ("malformed tsquery")."""
    return list(dict.fromkeys(t for t in tokens if has_lexeme(t)))[:MAX_SCORED_TERMS]


@dataclass(frozen=True, slots=True)
class LexemeStats:
    """The planner's statistics of a ``lexical_tsv`` column (``pg_stats``, refreshed by ANALYZE):
    the share of rows holding each of its most common lexemes (up to 1,000), the smallest such
    share (every other lexeme is rarer), and the table's row estimate."""

    shares: Mapping[str, float]
    floor: float
    rows: float

    def rows_with(self, term: str) -> float:
        """Estimated rows holding ``term`` (a lexeme outside the list: half the smallest share)."""
        return self.shares.get(term, self.floor / 2) * self.rows


LEXEME_STATS_SQL = """
SELECT s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs,
       (SELECT reltuples FROM pg_class WHERE oid = $1::text::regclass) AS reltuples
FROM pg_stats s WHERE s.schemaname = current_schema() AND s.tablename = $1::text AND s.attname = 'lexical_tsv'
"""


CITUS_NODE_STATS_SQL = (
    "SELECT result FROM run_command_on_all_nodes($node$\n"
    "SELECT coalesce(json_agg(json_build_object('elems', s.most_common_elems::text::text[], "
    "'freqs', s.most_common_elem_freqs, 'reltuples', c.reltuples)), '[]')::text\n"
    + local_shards_sql(
        "{table}",
        joins="JOIN pg_namespace n ON n.oid = c.relnamespace\n"
        "LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'lexical_tsv'\n",
    )
    + "\n$node$) WHERE success"
)
"""Citus: the same statistics from every shard (the coordinator's table is an empty shell with
none), one command per node listing the shards placed on it (a JSON list).

It was one command per shard (``run_command_on_shards``): with 32 shards, ~300 ms of CPU on each
worker every time the statistics were refreshed (every :data:`~omoide.stores.postgres.search.LEXEME_STATS_TTL`
seconds per store, on a search's path); per node it is ~20 ms for the same statistics
(measured on a 3-node cluster, 2026-11-26). ``{table}`` is a table name of
:data:`STATS_TABLES` (it is inside a string sent to the nodes, where no parameter reaches)."""
STATS_TABLES = frozenset({"knowledge_chunks", "memories"})
"""The tables with a ``lexical_tsv`` column whose statistics :func:`lexeme_stats` reads."""


def _stats_of(
    elems: Sequence[str] | None, freqs: Sequence[float] | None, reltuples: float | None
) -> LexemeStats | None:
    if elems is None or freqs is None or (reltuples or 0) <= 0 or len(freqs) < len(elems) + 2:
        return None
    return LexemeStats(dict(zip(elems, freqs, strict=False)), float(freqs[len(elems)]), float(reltuples or 0))


def merge_stats(parts: Sequence[LexemeStats]) -> LexemeStats | None:
    """One table's statistics from its shards': shares weighted by each shard's rows (a lexeme a
    shard does not list counts as half that shard's floor, as :meth:`LexemeStats.rows_with` does)."""
    rows = sum(p.rows for p in parts)
    if rows <= 0:
        return None
    lexemes = {lexeme for p in parts for lexeme in p.shares}
    shares = {lexeme: sum(p.rows_with(lexeme) for p in parts) / rows for lexeme in lexemes}
    return LexemeStats(shares, sum(p.floor * p.rows for p in parts) / rows, rows)


async def lexeme_stats(conn: asyncpg.Connection, table: str, *, citus: bool = False) -> LexemeStats | None:
    """The statistics of ``table.lexical_tsv``, or ``None`` before the table was analysed.

    ``citus``: the table is distributed; its statistics are its shards' (read on the workers,
    merged by :func:`merge_stats`), so common-word pruning and the IDFs' N are the same as on
    one server holding the same rows."""
    if citus:
        if table not in STATS_TABLES:
            raise InvalidInput(f"lexeme_stats reads the statistics of {sorted(STATS_TABLES)} only, not {table!r}")
        parts = []
        for record in await conn.fetch(CITUS_NODE_STATS_SQL.format(table=table)):
            for shard in json.loads(record["result"] or "[]"):
                part = _stats_of(shard.get("elems"), shard.get("freqs"), shard.get("reltuples"))
                if part is not None:
                    parts.append(part)
        return merge_stats(parts)
    row = await conn.fetchrow(LEXEME_STATS_SQL, table)
    if row is None:
        return None
    return _stats_of(row["elems"], row["freqs"], row["reltuples"])


def common_terms(terms: Sequence[str], stats: LexemeStats | None) -> dict[str, float]:
    """The terms whose matches are not all scored, with their estimated row counts.

    Nothing is pruned when the query's words match few rows anyway (:data:`PRUNE_ABOVE`).
    Otherwise the commonest words are set aside, commonest first, until the others match at
    most :data:`DRIVING_ROWS` rows together; those drive the candidates (every match of theirs
    is scored), the common ones only add to a candidate's score, plus a sample of
    :data:`COMMON_SAMPLE` rows that hold nothing else. Only a word the statistics list as
    frequent is ever set aside (never a rare one, however many a query has), and at least one
    word always drives. A common word has a small IDF, so its rows seldom reach the top.
    """
    if stats is None or len(terms) < 2:
        return {}
    rows = {t: stats.rows_with(t) for t in terms}
    if sum(rows.values()) <= PRUNE_ABOVE:
        return {}
    driving = dict(rows)
    common: dict[str, float] = {}
    for term in sorted(terms, key=lambda t: rows[t], reverse=True):
        if sum(driving.values()) <= DRIVING_ROWS or len(driving) == 1 or term not in stats.shares:
            break
        common[term] = driving.pop(term)
    return common


def bm25_sql(
    *,
    from_: str,
    table: str,
    alias: str,
    columns: str,
    where: str,
    args: list[Any],
    terms: Sequence[str],
    k: int,
    common: Mapping[str, float] | None = None,
    length: str | None = None,
    docs: float | None = None,
) -> str:
    """The ranking query over the rows of ``from_`` (``table`` as ``alias``, with any joins the
    filters need) passing ``where``; returns ``columns``, ``bm25_dl``, ``bm25_mask`` (bit ``i``:
    the row holds ``terms[i]``) and ``score``.

    ``args`` holds the parameters ``where`` refers to; the tokens' and ``k``'s are appended.
    ``common``: terms not to score every match of (:func:`common_terms`), with their estimated
    row counts, which stand in for their document frequencies.

    ``docs``: the table's row count for the IDFs' N (:attr:`LexemeStats.rows`); without it the
    query reads ``pg_class.reltuples`` itself — which on a Citus worker is the empty shell's.

    ``length``: an SQL expression for a row's length in distinct lexemes that does not read the
    ``tsvector`` (a stored column). With it, ``columns`` must be ``{alias}.id`` and the
    matches are found one term at a time (:func:`_matches_by_term`), so no row's ``tsvector``
    is read at all; without it, each match is tested against every term
    (:func:`_matches_by_row`).
    """
    common = dict(common or {})
    tsv = f"{alias}.lexical_tsv"
    if not terms:  # nothing can match (see scored_terms); the filters' parameters stay referenced
        return f"SELECT {columns}, 0::float8 AS score FROM {from_} WHERE false AND {where}"

    def param(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    # the tsqueries are parsed once (bm25_q, one row), not once per matching row
    driving = [t for t in terms if t not in common]
    driving_query = f"to_tsquery('simple', {param(tsquery_text(driving))})"
    term_queries = [f"to_tsquery('simple', {param(tsquery_text([term]))})" for term in terms]
    queries = [f"{driving_query} AS bm25_qd"] + [f"{q} AS bm25_q{i}" for i, q in enumerate(term_queries)]
    if common:
        queries.append(f"to_tsquery('simple', {param(tsquery_text(list(common)))}) AS bm25_qc")
        if length is not None:  # a common term's hits among the driving rows (_matches_by_term)
            queries += [
                f"{driving_query} && {term_queries[i]} AS bm25_qdc{i}" for i, t in enumerate(terms) if t in common
            ]
    limit = param(k)
    shape = _Shape(from_, columns, where, tsv, terms, common, limit)
    matches = _matches_by_term(shape, length) if length is not None else _matches_by_row(shape)
    # one row of statistics: each term's document frequency among the matches (or its
    # estimate, for a common term), then its IDF; the rows only add up the IDFs they hold
    df = ", ".join(
        f"{param(float(common[term]))}::float8 AS df{i}"
        if term in common
        else f"count(*) FILTER (WHERE bm25_mask & {_bit(i)} <> 0) AS df{i}"
        for i, term in enumerate(terms)
    )
    idf = ", ".join(
        f"ln(1 + greatest(n.docs - s.df{i} + 0.5, 0) / (s.df{i} + 0.5)) AS idf{i}" for i in range(len(terms))
    )
    score = " + ".join(f"CASE WHEN m.bm25_mask & {_bit(i)} <> 0 THEN t.idf{i} ELSE 0 END" for i in range(len(terms)))
    table_rows = (
        f"(SELECT reltuples FROM pg_class WHERE oid = '{table}'::regclass)"
        if docs is None
        else f"{param(float(docs))}::float8"
    )
    # bm25_t is materialised, so the logarithms are taken once, not once per row; the per-row
    # arithmetic is float8 (an integer length times a bare decimal would be numeric, ~10× slower)
    return (
        f"WITH bm25_q AS MATERIALIZED (SELECT {', '.join(queries)}), {matches}, "
        f"bm25_s AS (SELECT {df}, avg(bm25_dl)::float8 AS avgdl, count(*) AS matched FROM bm25_m), "
        f"bm25_t AS MATERIALIZED (SELECT greatest(s.avgdl, 1) AS avgdl, {idf} FROM bm25_s s, "
        f"(SELECT greatest({table_rows}, "
        f"(SELECT matched FROM bm25_s), 1)::float8 AS docs) n) "
        f"SELECT m.*, ({score}) * {BM25_K1 + 1}::float8 / "
        f"(1 + {BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * m.bm25_dl / t.avgdl)) AS score "
        f"FROM bm25_m m, bm25_t t ORDER BY score DESC, m.id LIMIT {limit}"
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the two ways of finding the matches share."""

    from_: str
    columns: str
    where: str
    tsv: str
    terms: Sequence[str]
    common: Mapping[str, float]
    limit: str


def _bit(i: int) -> str:
    """Term ``i``'s bit in ``bm25_mask`` (``bigint``: up to :data:`MAX_SCORED_TERMS` terms)."""
    return f"{1 << i}::bigint"


def _mask(shape: _Shape, indexes: Sequence[int]) -> str:
    """``bm25_mask`` of a row, testing its ``tsvector`` against terms ``indexes``."""
    return " | ".join(f"(CASE WHEN {shape.tsv} @@ bm25_q.bm25_q{i} THEN {_bit(i)} ELSE 0 END)" for i in indexes) or (
        "0::bigint"
    )


def _common_sample(shape: _Shape, length: str) -> str:
    """Rows holding only common words fill the list's tail, so they are sampled only when the
    driving words' matches do not fill it (a one-time filter: otherwise the common words'
    posting lists, tens of thousands of rows, are not even read)."""
    common = [i for i, t in enumerate(shape.terms) if t in shape.common]
    return (
        f"(SELECT {shape.columns}, {length} AS bm25_dl, {_mask(shape, common)} AS bm25_mask "
        f"FROM bm25_q, {shape.from_} WHERE (SELECT count(*) FROM bm25_d) < {shape.limit} "
        f"AND {shape.tsv} @@ bm25_q.bm25_qc AND NOT {shape.tsv} @@ bm25_q.bm25_qd AND {shape.where} "
        f"LIMIT {COMMON_SAMPLE})"
    )


def _matches_by_row(shape: _Shape) -> str:
    """``bm25_m``: the rows matching any driving term, each tested against every term.

    Testing reads the row's ``tsvector`` once per term; a chat chunk's is kilobytes, stored
    out of line (TOAST), and read anew by each test — fine for short rows (memories)."""
    length = f"length({shape.tsv})"
    rows = (
        f"SELECT {shape.columns}, {length} AS bm25_dl, {_mask(shape, range(len(shape.terms)))} AS bm25_mask "
        f"FROM bm25_q, {shape.from_} WHERE {shape.tsv} @@ bm25_q.bm25_qd AND {shape.where}"
    )
    if not shape.common:
        return f"bm25_m AS MATERIALIZED ({rows})"
    return (
        f"bm25_d AS MATERIALIZED ({rows}), "
        f"bm25_m AS MATERIALIZED (SELECT * FROM bm25_d UNION ALL {_common_sample(shape, length)})"
    )


def _matches_by_term(shape: _Shape, length: str) -> str:
    """``bm25_m`` without reading a ``tsvector``: one index scan per driving term returns the ids
    (and the stored length) of its matches, and a row's terms are the scans it came out of.

    At 1M chat chunks this took a two-word query's ranking from 47 to 23 ms at p95: testing
    each match against each term read its out-of-line ``tsvector`` three times (33k buffer
    reads for 2.8k matches, against 3.5k heap pages now).

    A common term's bit among the driving rows comes from one more index scan, for the rows
    holding it *and* a driving term (``bm25_qd && term``): the GIN index intersects the two
    posting lists, so only those rows are visited — pages the driving scans have just read —
    and no ``tsvector`` is read. (It used to join every driving row to its chunk again by
    primary key and test its out-of-line ``tsvector`` against each common term: up to
    :data:`DRIVING_ROWS` more row and TOAST reads per search.) Any row such a scan returns
    holds a driving term and passes the filters, so it is a driving row: the scans add bits,
    never rows."""
    scans = " UNION ALL ".join(
        f"SELECT {shape.columns} AS id, {length} AS dl, {_bit(i)} AS bit FROM bm25_q, {shape.from_} "
        f"WHERE {shape.tsv} @@ bm25_q.{_query_of(shape, i)} AND {shape.where}"
        for i in range(len(shape.terms))
    )
    by_id = f"SELECT id, max(dl) AS bm25_dl, bit_or(bit) AS bm25_mask FROM ({scans}) bm25_u GROUP BY id"
    if not shape.common:
        return f"bm25_m AS MATERIALIZED ({by_id})"
    return (
        f"bm25_d AS MATERIALIZED ({by_id}), "
        f"bm25_m AS MATERIALIZED (SELECT * FROM bm25_d UNION ALL {_common_sample(shape, length)})"
    )


def _query_of(shape: _Shape, i: int) -> str:
    """The ``bm25_q`` column whose matches carry term ``i``'s bit in :func:`_matches_by_term`:
    the term itself when it drives, else the term *and* any driving term (``bm25_qdc{i}``)."""
    return f"bm25_qdc{i}" if shape.terms[i] in shape.common else f"bm25_q{i}"


__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_SCORED_TERMS",
    "LexemeStats",
    "bm25_sql",
    "common_terms",
    "has_lexeme",
    "lexeme_stats",
    "scored_terms",
    "tsquery_text",
]
