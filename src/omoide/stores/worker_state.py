"""What the workers tell every other process, kept in the database: heartbeats, job progress, errors.

A worker (``omoide worker``, ``mem.workers()``) or ``omoide embed`` may run on another host than
the HTTP server, ``omoide status`` or the inspector that report on it. Anything that reaches the
store sees the store, so this is where the workers write what they are doing: one small table,
``worker_state``, one row per ``(kind, key)``:

=============  ==========================  =============================================
kind           key                         payload
=============  ==========================  =============================================
``runner``     ``host:pid``                the process's jobs, start, whether it runs
``progress``   ``job@host:pid``            chunks done / total, rate, time left
``error``      ``time host:pid job``       a failed run: omoide's code and message
=============  ==========================  =============================================

A row's ``updated_at`` is set by the database's clock, and :meth:`WorkerStateStore.rows` returns
each row's age by that same clock, so hosts whose clocks disagree still agree on how old a
heartbeat is. Rows expire: readers ignore old ones and :meth:`~WorkerStateStore.prune` deletes
them (the writers prune as they go).

Why not a table per kind or columns per field: the three kinds are read whole, by kind, a few
rows at a time, and their fields belong to :mod:`omoide.workers` (a new field needs no
migration). On Citus the table stays a plain table on the coordinator (it has no workspace), so a
heartbeat is one local upsert: no distributed transaction, no shard.

:class:`WorkerStateStore` is the contract of the backends: its public methods check their
arguments once, here, then call the backend's ``_<name>``; :func:`worker_state_of` gives the one
of a store.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
from weakref import WeakKeyDictionary

from omoide.errors import InvalidInput

if TYPE_CHECKING:
    from omoide.stores.base import Store

StateKind = Literal["runner", "progress", "error"]
KINDS: tuple[StateKind, ...] = ("runner", "progress", "error")
MAX_KEY_CHARS = 300
MAX_PAYLOAD_BYTES = 16_384
"""A payload is a few hundred bytes; this bound keeps a runaway error message out of the table."""


@dataclass(frozen=True, slots=True)
class WorkerStateRow:
    """One row as read back.

    Attributes:
        kind / key: what it is and whose (see the module docstring).
        payload: the JSON object the writer stored.
        updated_at: when it was last written (aware UTC, the database's clock).
        age_seconds: how long ago that was, by the database's clock.
    """

    kind: StateKind
    key: str
    payload: dict[str, Any]
    updated_at: datetime
    age_seconds: float


def _check_kind(kind: str) -> StateKind:
    if kind not in KINDS:
        raise InvalidInput(f"worker state kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return kind


def encode_payload(payload: Mapping[str, Any]) -> str:
    """The payload as compact JSON text (what both backends store).

    Raises:
        InvalidInput: not a JSON object, or larger than :data:`MAX_PAYLOAD_BYTES`.
    """
    try:
        text = json.dumps(dict(payload), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a worker state payload must be a JSON object: {exc}") from exc
    if len(text.encode()) > MAX_PAYLOAD_BYTES:
        raise InvalidInput(
            f"a worker state payload is {len(text.encode()):,} bytes, over {MAX_PAYLOAD_BYTES:,}: cut its text fields"
        )
    return text


def decode_payload(value: Any) -> dict[str, Any]:
    """A stored payload (JSON text, or already decoded) as a dict; anything else reads as ``{}``."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, dict) else {}


class WorkerStateStore(abc.ABC):
    """The ``worker_state`` rows of one database (see the module docstring).

    Example:
        >>> state = worker_state_of(mem.store)                                        # doctest: +SKIP
        >>> await state.put("runner", "host-a:4242", {"jobs": ["embedder"], "running": True})  # doctest: +SKIP
        >>> [row.key for row in await state.rows("runner")]                          # doctest: +SKIP
        ['host-a:4242']
    """

    async def put(self, kind: str, key: str, payload: Mapping[str, Any]) -> None:
        """Insert or replace the row ``(kind, key)``; its ``updated_at`` becomes the database's now.

        Raises:
            InvalidInput: an unknown kind, an empty or overlong key, a payload that is no JSON object or too big.
            StoreError: the database failed (callers that must not fail catch it: see :mod:`omoide.workers`).
        """
        if not key or len(key) > MAX_KEY_CHARS:
            raise InvalidInput(f"a worker state key must be 1–{MAX_KEY_CHARS} characters, got {len(key)}")
        await self._put(_check_kind(kind), key, encode_payload(payload))

    async def rows(self, kind: str, *, limit: int = 100) -> list[WorkerStateRow]:
        """The rows of ``kind``, the most recently written first, at most ``limit``.

        A database not migrated this far (no ``worker_state`` table) has no rows.

        Raises:
            InvalidInput: an unknown kind or a ``limit`` below 1.
        """
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, got {limit}")
        return await self._rows(_check_kind(kind), limit)

    async def prune(self, kind: str, *, older_than: float | None = None, keep: int | None = None) -> int:
        """Delete the rows of ``kind`` written over ``older_than`` seconds ago, and all but the newest ``keep``.

        Returns:
            How many rows were deleted.

        Raises:
            InvalidInput: an unknown kind, a negative bound, or neither bound given.
        """
        if older_than is None and keep is None:
            raise InvalidInput("prune needs older_than (seconds) or keep (rows), or both")
        if (older_than is not None and older_than < 0) or (keep is not None and keep < 0):
            raise InvalidInput(f"prune bounds must not be negative, got older_than={older_than} keep={keep}")
        return await self._prune(_check_kind(kind), older_than, keep)

    @abc.abstractmethod
    async def _put(self, kind: StateKind, key: str, payload: str) -> None: ...

    @abc.abstractmethod
    async def _rows(self, kind: StateKind, limit: int) -> list[WorkerStateRow]: ...

    @abc.abstractmethod
    async def _prune(self, kind: StateKind, older_than: float | None, keep: int | None) -> int: ...


_OF: WeakKeyDictionary[Store, WorkerStateStore] = WeakKeyDictionary()


def worker_state_of(store: Store) -> WorkerStateStore:
    """The worker state of ``store`` (one object per store, sharing its connections).

    Raises:
        ConfigError: the store is neither omoide's SQLite nor its PostgreSQL backend.
    """
    found = getattr(store, "worker_state", None)
    if isinstance(found, WorkerStateStore):
        return found
    if store in _OF:
        return _OF[store]
    db = getattr(store, "_db", None)
    state: WorkerStateStore
    if store.backend == "sqlite" and db is not None:
        from omoide.stores.sqlite.worker_state import SqliteWorkerState

        state = SqliteWorkerState(db)
    elif store.backend == "postgresql" and db is not None:
        from omoide.stores.postgres.worker_state import PostgresWorkerState

        state = PostgresWorkerState(db)
    else:
        from omoide.errors import ConfigError

        raise ConfigError(
            f"{type(store).__name__} keeps no worker state: give it a `worker_state` attribute "
            "(a omoide.stores.worker_state.WorkerStateStore)"
        )
    _OF[store] = state
    return state


__all__ = [
    "KINDS",
    "MAX_KEY_CHARS",
    "MAX_PAYLOAD_BYTES",
    "StateKind",
    "WorkerStateRow",
    "WorkerStateStore",
    "decode_payload",
    "encode_payload",
    "worker_state_of",
]
