"""The SQLite schema, one tuple of statements per migration (see ``docs/schema.md``).

SQLite specifics, compared with the PostgreSQL schema:

* ids are ``INTEGER PRIMARY KEY AUTOINCREMENT`` (never reused, like an identity column);
* timestamps are ISO-8601 UTC text ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``, so text order
  is time order and ``max()`` / ``<`` work on them;
* JSON (content blocks, metadata, tags, locations) is stored as text;
* vectors are float32 BLOBs (``length(embedding) = 4 * dimensions``);
* lexical search uses FTS5 tables with *external content* (``knowledge_chunks_fts``,
  ``memories_fts``) that index the ``lexical`` column, kept in sync by triggers. omoide
  writes its own space-separated tokens into ``lexical`` (Japanese morphemes or n-grams),
  so the ``unicode61`` tokenizer only has to split on spaces and fold case/diacritics.

Statements are kept apart (no ``executescript``, which commits) so that a migration runs
inside the migrator's ``BEGIN IMMEDIATE`` transaction: SQLite DDL is transactional.
"""

from __future__ import annotations

FTS_TOKENIZE = "unicode61 remove_diacritics 2"

SCHEMA_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  TEXT NOT NULL
)
"""


def _fts_sync(table: str, fts: str) -> tuple[str, ...]:
    """An external-content FTS5 table over ``table.lexical`` and the triggers that keep it in sync."""
    return (
        f"""
        CREATE VIRTUAL TABLE {fts} USING fts5(
            lexical,
            content='{table}',
            content_rowid='id',
            tokenize='{FTS_TOKENIZE}'
        )
        """,
        f"""
        CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN
            INSERT INTO {fts}(rowid, lexical) VALUES (new.id, new.lexical);
        END
        """,
        f"""
        CREATE TRIGGER {table}_fts_delete AFTER DELETE ON {table} BEGIN
            INSERT INTO {fts}({fts}, rowid, lexical) VALUES ('delete', old.id, old.lexical);
        END
        """,
        f"""
        CREATE TRIGGER {table}_fts_update AFTER UPDATE OF lexical ON {table} BEGIN
            INSERT INTO {fts}({fts}, rowid, lexical) VALUES ('delete', old.id, old.lexical);
            INSERT INTO {fts}(rowid, lexical) VALUES (new.id, new.lexical);
        END
        """,
    )


V1_SESSIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        id                INTEGER PRIMARY KEY AUTOINCREMENT,
        session_key       TEXT NOT NULL UNIQUE,
        policy            TEXT NOT NULL CHECK (policy IN ('user_channel', 'channel', 'thread', 'agent')),
        platform          TEXT NOT NULL,
        workspace_id      TEXT NOT NULL,
        channel_id        TEXT,
        thread_id         TEXT,
        user_id           TEXT,
        agent_id          TEXT,
        status            TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived', 'expired')),
        version           INTEGER NOT NULL DEFAULT 1,
        last_seq          INTEGER NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
        archived_seq      INTEGER NOT NULL DEFAULT 0,
        window_start_seq  INTEGER NOT NULL DEFAULT 0,
        last_active_at    TEXT NOT NULL,
        created_at        TEXT NOT NULL,
        CONSTRAINT sessions_archived_seq_range CHECK (archived_seq BETWEEN 0 AND last_seq),
        CONSTRAINT sessions_window_start_seq_range CHECK (window_start_seq BETWEEN 0 AND last_seq)
    )
    """,
    "CREATE INDEX sessions_status_last_active_idx ON sessions (status, last_active_at)",
    "CREATE INDEX sessions_workspace_last_active_idx ON sessions (workspace_id, last_active_at)",
    """
    CREATE TABLE session_messages (
        id                   INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id           INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        workspace_id         TEXT NOT NULL,
        seq                  INTEGER NOT NULL CHECK (seq > 0),
        role                 TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content              TEXT NOT NULL,
        author_id            TEXT,
        author_name          TEXT,
        is_bot               INTEGER NOT NULL DEFAULT 0 CHECK (is_bot IN (0, 1)),
        platform_message_id  TEXT,
        created_at           TEXT NOT NULL,
        UNIQUE (session_id, seq)
    )
    """,
    """
    CREATE UNIQUE INDEX session_messages_platform_id_uq
        ON session_messages (workspace_id, platform_message_id)
        WHERE platform_message_id IS NOT NULL
    """,
)

V1_KNOWLEDGE: tuple[str, ...] = (
    """
    CREATE TABLE knowledge_sources (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace_id  TEXT NOT NULL,
        type          TEXT NOT NULL CHECK (type <> ''),
        title         TEXT,
        uri           TEXT,
        status        TEXT NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
        metadata      TEXT NOT NULL DEFAULT '{}',
        error         TEXT,
        attempts      INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        claimed_at    TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    )
    """,
    "CREATE INDEX knowledge_sources_workspace_created_idx ON knowledge_sources (workspace_id, created_at)",
    "CREATE INDEX knowledge_sources_status_idx ON knowledge_sources (status)",
    """
    CREATE TABLE knowledge_chunks (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        source_id     INTEGER NOT NULL REFERENCES knowledge_sources (id) ON DELETE CASCADE,
        workspace_id  TEXT NOT NULL,
        channel_id    TEXT,
        thread_id     TEXT,
        chunk_index   INTEGER NOT NULL CHECK (chunk_index >= 0),
        content       TEXT NOT NULL,
        lexical       TEXT NOT NULL DEFAULT '',
        location      TEXT NOT NULL DEFAULT '{}',
        author_ids    TEXT NOT NULL DEFAULT '[]',
        token_count   INTEGER NOT NULL DEFAULT 0 CHECK (token_count >= 0),
        started_at    TEXT,
        ended_at      TEXT,
        created_at    TEXT NOT NULL,
        UNIQUE (source_id, chunk_index)
    )
    """,
    """
    CREATE INDEX knowledge_chunks_workspace_channel_started_idx
        ON knowledge_chunks (workspace_id, channel_id, started_at)
    """,
    *_fts_sync("knowledge_chunks", "knowledge_chunks_fts"),
    """
    CREATE TABLE chunk_embeddings (
        chunk_id      INTEGER NOT NULL REFERENCES knowledge_chunks (id) ON DELETE CASCADE,
        workspace_id  TEXT NOT NULL,
        model         TEXT NOT NULL CHECK (model <> ''),
        dimensions    INTEGER NOT NULL CHECK (dimensions > 0),
        embedding     BLOB NOT NULL CHECK (length(embedding) = 4 * dimensions),
        content_hash  TEXT,
        embedded_at   TEXT NOT NULL,
        PRIMARY KEY (chunk_id, model)
    )
    """,
    "CREATE INDEX chunk_embeddings_workspace_model_idx ON chunk_embeddings (workspace_id, model)",
)

V1_MEMORIES: tuple[str, ...] = (
    """
    CREATE TABLE memories (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace_id  TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        content       TEXT NOT NULL,
        lexical       TEXT NOT NULL DEFAULT '',
        category      TEXT NOT NULL DEFAULT 'general',
        tags          TEXT NOT NULL DEFAULT '[]',
        metadata      TEXT NOT NULL DEFAULT '{}',
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    )
    """,
    "CREATE INDEX memories_workspace_user_created_idx ON memories (workspace_id, user_id, created_at)",
    *_fts_sync("memories", "memories_fts"),
    """
    CREATE TABLE memory_embeddings (
        memory_id     INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        workspace_id  TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        model         TEXT NOT NULL CHECK (model <> ''),
        dimensions    INTEGER NOT NULL CHECK (dimensions > 0),
        embedding     BLOB NOT NULL CHECK (length(embedding) = 4 * dimensions),
        embedded_at   TEXT NOT NULL,
        PRIMARY KEY (memory_id, model)
    )
    """,
    "CREATE INDEX memory_embeddings_workspace_user_model_idx ON memory_embeddings (workspace_id, user_id, model)",
)

V1_SUMMARIES: tuple[str, ...] = (
    """
    CREATE TABLE summaries (
        id                        INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace_id              TEXT NOT NULL,
        scope                     TEXT NOT NULL CHECK (scope IN ('thread', 'channel', 'workspace', 'user')),
        scope_id                  TEXT NOT NULL,
        kind                      TEXT NOT NULL CHECK (kind IN ('short_term', 'long_term')),
        version                   INTEGER NOT NULL CHECK (version > 0),
        content                   TEXT NOT NULL,
        source_message_count      INTEGER NOT NULL DEFAULT 0 CHECK (source_message_count >= 0),
        source_latest_message_at  TEXT,
        metadata                  TEXT NOT NULL DEFAULT '{}',
        created_at                TEXT NOT NULL,
        UNIQUE (workspace_id, scope, scope_id, kind, version)
    )
    """,
)

V1: tuple[str, ...] = V1_SESSIONS + V1_KNOWLEDGE + V1_MEMORIES + V1_SUMMARIES

# Every table and FTS table of the current schema, for tests and `omoide db` status output.
TABLES: tuple[str, ...] = (
    "sessions",
    "session_messages",
    "knowledge_sources",
    "knowledge_chunks",
    "knowledge_chunks_fts",
    "chunk_embeddings",
    "memories",
    "memories_fts",
    "memory_embeddings",
    "summaries",
    "store_meta",
    "search_generations",
    "memory_generations",
    "erasure_state",
    "erased_users",
)

V2: tuple[str, ...] = (
    "ALTER TABLE sessions ADD COLUMN context_summary TEXT",
    "ALTER TABLE sessions ADD COLUMN context_summary_seq INTEGER NOT NULL DEFAULT 0 CHECK (context_summary_seq >= 0)",
)
"""Migration 2: the persisted prompt compaction of a session (seed 002)."""

V3: tuple[str, ...] = (
    # sessions_to_archive: only sessions with unarchived messages, oldest activity first
    "CREATE INDEX sessions_unarchived_idx ON sessions (last_active_at, id) WHERE last_seq > archived_seq",
    # claim_sources: the embedding queue, oldest first
    """
    CREATE INDEX knowledge_sources_claimable_idx ON knowledge_sources (id)
        WHERE status IN ('pending', 'processing')
    """,
    # list_sources(workspace_id=...): newest first
    "CREATE INDEX knowledge_sources_workspace_id_idx ON knowledge_sources (workspace_id, id)",
)
"""Migration 3: indexes for the archiver's pick, the embedding queue and source listing."""


def _generation_bump(event: str, row: str) -> str:
    # no INSERT OR IGNORE / upsert here: an outer upsert's conflict handling would override it
    name = event.lower().split()[0]
    return f"""
    CREATE TRIGGER chunk_embeddings_generation_{name} AFTER {event} ON chunk_embeddings BEGIN
        INSERT INTO search_generations (workspace_id, generation)
            SELECT {row}.workspace_id, 0
            WHERE NOT EXISTS (SELECT 1 FROM search_generations WHERE workspace_id = {row}.workspace_id);
        UPDATE search_generations SET generation = generation + 1 WHERE workspace_id = {row}.workspace_id;
    END
    """


V4: tuple[str, ...] = (
    # key/value facts about the indexes, e.g. lexical_tokenizer = 'sudachi-core:v1'
    """
    CREATE TABLE store_meta (
        key         TEXT PRIMARY KEY,
        value       TEXT NOT NULL,
        updated_at  TEXT NOT NULL
    )
    """,
    # vector search caches one matrix per (workspace, model); any change to a workspace's
    # embeddings (from any connection or process, cascading deletes included) bumps its row
    """
    CREATE TABLE search_generations (
        workspace_id  TEXT PRIMARY KEY,
        generation    INTEGER NOT NULL DEFAULT 0
    )
    """,
    _generation_bump("INSERT", "new"),
    _generation_bump("UPDATE", "new"),
    _generation_bump("DELETE", "old"),
)
"""Migration 4: search bookkeeping (``store_meta``; per-workspace embedding generations)."""


MEMORY_SCOPE_SQL = "'omoidescope' || hex({row}.workspace_id || char(31) || {row}.user_id)"
"""The token every memory's FTS document carries for its owner (see migration 5)."""


def memory_scope_token(workspace_id: str, user_id: str) -> str:
    """The owner token of migration 5, as :data:`MEMORY_SCOPE_SQL` computes it in SQL."""
    return "omoidescope" + (workspace_id + "\x1f" + user_id).encode().hex().upper()


def _memory_generation_bump(event: str, row: str, *, table: str = "memory_embeddings") -> str:
    name = event.lower().split()[0]
    return f"""
    CREATE TRIGGER {table}_generation_{name} AFTER {event} ON {table} BEGIN
        INSERT INTO memory_generations (workspace_id, user_id, generation)
            SELECT {row}.workspace_id, {row}.user_id, 0
            WHERE NOT EXISTS (
                SELECT 1 FROM memory_generations WHERE workspace_id = {row}.workspace_id AND user_id = {row}.user_id
            );
        UPDATE memory_generations SET generation = generation + 1
            WHERE workspace_id = {row}.workspace_id AND user_id = {row}.user_id;
    END
    """


def _memory_fts_document(row: str) -> str:
    return f"{row}.lexical || ' ' || " + MEMORY_SCOPE_SQL.format(row=row)


V5: tuple[str, ...] = (
    # recall caches one normalised matrix per (workspace, user, model) and one lexical index
    # per user; any change to that user's vectors, from any connection or process, bumps
    # their row
    """
    CREATE TABLE memory_generations (
        workspace_id  TEXT NOT NULL,
        user_id       TEXT NOT NULL,
        generation    INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (workspace_id, user_id)
    ) WITHOUT ROWID
    """,
    _memory_generation_bump("INSERT", "new"),
    _memory_generation_bump("UPDATE", "new"),
    _memory_generation_bump("DELETE", "old"),
    # …and so does any change to their memories' text (the per-user lexical index)
    _memory_generation_bump("INSERT", "new", table="memories"),
    _memory_generation_bump("UPDATE OF lexical", "new", table="memories"),
    _memory_generation_bump("DELETE", "old", table="memories"),
    # every memory's full-text document carries its owner's token, so a user's lexical recall
    # intersects posting lists instead of matching every user's memories and filtering after
    "DROP TRIGGER memories_fts_insert",
    "DROP TRIGGER memories_fts_delete",
    "DROP TRIGGER memories_fts_update",
    "DROP TABLE memories_fts",
    f"CREATE VIRTUAL TABLE memories_fts USING fts5(lexical, content='', tokenize='{FTS_TOKENIZE}')",
    f"""
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, lexical) VALUES (new.id, {_memory_fts_document("new")});
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, lexical) VALUES ('delete', old.id, {_memory_fts_document("old")});
    END
    """,
    f"""
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF lexical, workspace_id, user_id ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, lexical) VALUES ('delete', old.id, {_memory_fts_document("old")});
        INSERT INTO memories_fts(rowid, lexical) VALUES (new.id, {_memory_fts_document("new")});
    END
    """,
    f"INSERT INTO memories_fts(rowid, lexical) SELECT m.id, {_memory_fts_document('m')} FROM memories m",
    "CREATE INDEX memories_workspace_user_category_idx ON memories (workspace_id, user_id, category, created_at)",
)
"""Migration 5: memory recall — per-user generations (vectors and text) and owner-scoped full text."""

V6: tuple[str, ...] = (
    # API keys of the HTTP API and MCP server: the SHA-256 of the token, never the token
    """
    CREATE TABLE api_keys (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace_id  TEXT NOT NULL CHECK (workspace_id <> ''),
        name          TEXT NOT NULL DEFAULT '',
        prefix        TEXT NOT NULL,
        token_hash    TEXT NOT NULL UNIQUE CHECK (length(token_hash) = 64),
        created_at    TEXT NOT NULL,
        revoked_at    TEXT
    )
    """,
    "CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, id)",
)
"""Migration 6: ``api_keys`` (hashed tokens, one workspace each)."""


def _is_private_sql(meta: str, workspace: str) -> str:
    """Whether a source's metadata already says it came from a private conversation (migration 7's backfill)."""
    platform = f"json_extract({meta}, '$.platform')"
    channel = f"coalesce(json_extract({meta}, '$.channel_id'), '')"
    name = f"coalesce(json_extract({meta}, '$.channel_name'), '')"
    return (
        f"(({platform} = 'slack' AND ({channel} GLOB 'D*' OR {channel} GLOB 'G*' OR {name} GLOB 'mpdm-*' "
        f"OR {name} GLOB 'DM: *')) OR ({platform} = 'discord' AND {workspace} = '0'))"
    )


V7: tuple[str, ...] = (
    # visibility of long-term knowledge: public to the workspace (private = 0) or private to
    # `members` (a JSON list of user ids); chunks carry a copy so search filters without a join
    "ALTER TABLE knowledge_sources ADD COLUMN private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1))",
    "ALTER TABLE knowledge_sources ADD COLUMN members TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE knowledge_chunks ADD COLUMN private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1))",
    "ALTER TABLE knowledge_chunks ADD COLUMN members TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE sessions ADD COLUMN private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1))",
    "ALTER TABLE sessions ADD COLUMN members TEXT NOT NULL DEFAULT '[]'",
    # the few private chunks of a workspace: what a viewer's vector search masks out
    "CREATE INDEX knowledge_chunks_private_idx ON knowledge_chunks (workspace_id, id) WHERE private = 1",
    # backfill where the stored data already says "private": Slack DM / MPIM / legacy private
    # group ids (D…, G…, mpdm-…, imported "DM: …" names) and Discord DMs (guild "0")
    """
    UPDATE sessions SET private = 1, members = CASE WHEN user_id IS NULL THEN '[]' ELSE json_array(user_id) END
    WHERE platform = 'slack' AND (channel_id GLOB 'D*' OR channel_id GLOB 'G*')
       OR platform = 'discord' AND workspace_id = '0'
    """,
    f"""
    UPDATE knowledge_sources
    SET private = 1,
        members = CASE WHEN json_type(metadata, '$.participants') = 'array'
                       THEN json_extract(metadata, '$.participants') ELSE '[]' END
    WHERE {_is_private_sql("metadata", "workspace_id")}
    """,
    """
    UPDATE knowledge_chunks
    SET private = 1, members = (SELECT s.members FROM knowledge_sources s WHERE s.id = knowledge_chunks.source_id)
    WHERE source_id IN (SELECT id FROM knowledge_sources WHERE private = 1)
    """,
)
"""Migration 7: knowledge visibility (``private``, ``members`` on sources, chunks and sessions) and its backfill."""

V8: tuple[str, ...] = (
    # the cl100k token count of a message's only text block, counted once when it is stored
    # (NULL: several blocks, a tool block, or stored before this migration: counted when used)
    "ALTER TABLE session_messages ADD COLUMN token_count INTEGER CHECK (token_count >= 0)",
)
"""Migration 8: ``session_messages.token_count`` (a stored window is not re-encoded after a restart)."""

V9: tuple[str, ...] = (
    # one row per workspace that ever erased a user: every erasure bumps `generation`, and a
    # job that read the workspace before (summaries, imports) re-checks it in its writing
    # transaction, so it cannot write erased words back
    """
    CREATE TABLE erasure_state (
        workspace_id  TEXT PRIMARY KEY,
        generation    INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0)
    ) WITHOUT ROWID
    """,
    # who was erased (SHA-256 of workspace and user, never the id itself) and when: imports and
    # syncs skip their messages written before that time, so an old export cannot bring them back
    """
    CREATE TABLE erased_users (
        workspace_id  TEXT NOT NULL,
        user_hash     TEXT NOT NULL,
        erased_at     TEXT NOT NULL,
        PRIMARY KEY (workspace_id, user_hash)
    ) WITHOUT ROWID
    """,
)
"""Migration 9: user erasure bookkeeping (``erasure_state``, ``erased_users``)."""

V10: tuple[str, ...] = (
    # retrieval units (omoide.stores.units): each line record's search tokens, a JSON array of
    # strings (NULL: written before units existed, or no line records), and the unit vectors
    # stored with a chunk's vector (float32 little-endian, lines x dimensions; NULL: not yet).
    # No backfill: `omoide reindex --units` fills both.
    "ALTER TABLE knowledge_chunks ADD COLUMN unit_lexical TEXT CHECK (unit_lexical IS NULL OR json_type(unit_lexical) = 'array')",
    """
    ALTER TABLE chunk_embeddings ADD COLUMN unit_vectors BLOB
        CHECK (unit_vectors IS NULL OR (length(unit_vectors) > 0 AND length(unit_vectors) % (4 * dimensions) = 0))
    """,
    # what `reindex --units` and `omoide status` look for, without reading every (wide) row:
    # chat chunks without unit tokens (empty once the reindex ran), and vectors without unit
    # vectors (once the reindex ran: only those of chunks without line records, e.g. documents)
    """
    CREATE INDEX knowledge_chunks_units_missing_idx ON knowledge_chunks (id)
        WHERE unit_lexical IS NULL AND json_array_length(location, '$.lines') > 0
    """,
    "CREATE INDEX chunk_embeddings_units_missing_idx ON chunk_embeddings (model, chunk_id) WHERE unit_vectors IS NULL",
    # adding unit vectors to a vector leaves the cached search matrices valid: only a change to
    # the vector itself (or its row) bumps the workspace's generation
    "DROP TRIGGER chunk_embeddings_generation_update",
    _generation_bump("UPDATE OF chunk_id, workspace_id, model, dimensions, embedding", "new"),
)
"""Migration 10: retrieval units (``knowledge_chunks.unit_lexical``, ``chunk_embeddings.unit_vectors``)."""

__all__ = [
    "FTS_TOKENIZE",
    "MEMORY_SCOPE_SQL",
    "SCHEMA_MIGRATIONS_TABLE",
    "TABLES",
    "V1",
    "V2",
    "V3",
    "V4",
    "V5",
    "V6",
    "V7",
    "V8",
    "V9",
    "V10",
    "memory_scope_token",
]
