"""Erasing a user, the part every backend shares: which lines of a chunk go, and what is left.

The erasure rule (``docs/privacy.md``): when a user is forgotten, nothing they wrote or that
is about them stays retrievable. The stores apply it in one transaction; this module holds
the backend-independent pieces:

* :func:`line_spans` reads a chunk's ``location["lines"]``: for each line of its content,
  ``[start, end, author_id, message_id]`` (character offsets into ``content``). The archiver's
  chunker and the importers write it; it is how an erasure knows which lines are whose.
* :func:`strip_user` rewrites a chunk without one user's lines: new content, lexical text,
  token count, location and authors, or ``None`` when nothing would be left (or when the
  chunk predates line records, so its lines cannot be told apart: it is dropped whole).
* :func:`user_hash` is what ``erased_users`` keeps instead of the user id.
* :class:`ErasureAware` is the part of the store contracts (knowledge, memories, summaries)
  that a job writing people's words reads first: :meth:`ErasureAware.erasure_state`.
"""

from __future__ import annotations

import abc
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from omoide.errors import ErasureConflict, InvalidInput
from omoide.providers.tokens import get_token_counter
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import chunk_lexical_text

LINES_KEY = "lines"
"""``location`` key of a chunk's line records: ``[[start, end, author_id, message_id], …]``."""
PLATFORM_IDS_KEY = "platform_message_ids"
"""``location`` key of an archived session's chunk: each stored message id (as a string) → the
platform's id of that message (``{"41": "1425094170531463168"}``), when the message had one."""


@dataclass(frozen=True, slots=True)
class LineSpan:
    """One line of a chunk: ``content[start:end]``, written by ``author_id`` as message ``message_id``."""

    start: int
    end: int
    author_id: str | None
    message_id: Any = None

    def as_json(self) -> list[Any]:
        return [self.start, self.end, self.author_id, self.message_id]


@dataclass(frozen=True, slots=True)
class ErasureState:
    """What a job reads before its work and re-checks when it writes (``Store.erasure_state``).

    Attributes:
        generation: bumped by every erasure in the workspace; a summary or import written with
            an older one is refused (:class:`~omoide.errors.ErasureConflict`).
        erased: ``user_hash`` → when that user was erased.
    """

    generation: int = 0
    erased: Mapping[str, datetime] = field(default_factory=dict)

    def erased_before(self, workspace_id: str, author_id: str | None, at: datetime) -> bool:
        """Whether a message of ``author_id`` written at ``at`` belongs to an erasure (an import must skip it)."""
        if author_id is None or not self.erased:
            return False
        when = self.erased.get(user_hash(workspace_id, author_id))
        return when is not None and at <= when


class ErasureAware(abc.ABC):
    """What a job that writes people's words reads first, so that it never writes back an erased user's.

    Mixed into the store contracts whose writes carry an erasure generation (knowledge,
    memories, summaries); a backend implements :meth:`_erasure_state`.
    """

    async def erasure_state(self, workspace_id: str) -> ErasureState:
        """The workspace's erasure generation and erased users (hashed).

        A summary or import reads it before its work, skips erased authors, and passes the
        generation back when it writes (``SummaryDraft.erasure_generation``,
        ``add_source(erasure_generation=...)``): a write made stale by an erasure in between
        raises :class:`~omoide.errors.ErasureConflict`.

        Raises:
            InvalidInput: ``workspace_id`` is not a non-empty string.
        """
        return await self._erasure_state(check_workspace(workspace_id))

    @abc.abstractmethod
    async def _erasure_state(self, workspace_id: str) -> ErasureState:
        """The erasure state of a checked workspace id (backend)."""


def check_generation(workspace_id: str, expected: int, current: int) -> None:
    """Raise :class:`~omoide.errors.ErasureConflict` when an erasure happened since a job read ``expected``."""
    if current != expected:
        raise ErasureConflict(
            f"a user of workspace {workspace_id!r} was erased while this job ran; it must re-read and retry",
            workspace_id=workspace_id,
            expected=expected,
            current=current,
        )


def check_workspace(workspace_id: object) -> str:
    if not isinstance(workspace_id, str) or not workspace_id:
        raise InvalidInput(f"workspace_id must be a non-empty string, got {workspace_id!r}")
    return workspace_id


@dataclass(frozen=True, slots=True)
class ChunkRewrite:
    """A chunk without the erased user's lines."""

    content: str
    lexical: str
    token_count: int
    location: dict[str, Any]
    author_ids: list[str]
    unit_lexical: tuple[str, ...] | None = None  # the kept lines' search tokens (omoide.stores.units)


def content_hash(text: str) -> str:
    """``b2:`` + BLAKE2b-128 of the text (the prefix names the algorithm): what an embedding was made of.

    ``put_embeddings`` compares it with the chunk's content in its writing transaction, so a
    vector of text that an erasure rewrote meanwhile is never stored.
    """
    return "b2:" + hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def stale_rows(current: Mapping[int, str], hashes: Sequence[tuple[int, str | None]]) -> set[int]:
    """Chunk ids whose embedding was made of other text than the chunk now holds."""
    return {cid for cid, h in hashes if h is not None and cid in current and content_hash(current[cid]) != h}


def scrub_source(
    title: str | None, metadata: Mapping[str, Any], user_id: str
) -> tuple[str | None, dict[str, Any]] | None:
    """A source's title and metadata without the user; ``None``: neither names them.

    Metadata loses them from ``participants`` and ``participant_names``; a title listing the
    people of a conversation (``… with Alice, Bob · …``, the archiver's) loses their name.
    """
    out = dict(metadata)
    changed = False
    participants = out.get("participants")
    if isinstance(participants, list) and user_id in participants:
        out["participants"] = [p for p in participants if p != user_id]
        changed = True
    names = out.get("participant_names")
    name = None
    if isinstance(names, dict) and user_id in names:
        name = names[user_id] if isinstance(names[user_id], str) else None
        out["participant_names"] = {k: v for k, v in names.items() if k != user_id}
        changed = True
    new_title = title
    if title:
        for who in dict.fromkeys((user_id, name)):
            if not who:
                continue
            new_title = re.sub(
                rf"(?<=with ){re.escape(who)}(, |(?= ·))|, {re.escape(who)}(?=[, ]|$)", "", new_title or ""
            )
            new_title = new_title.replace(" with  ·", " ·").replace(" with ·", " ·")
        changed = changed or new_title != title
    return (new_title, out) if changed else None


def user_hash(workspace_id: str, user_id: str) -> str:
    """``sha256:`` + SHA-256 of workspace and user: how ``erased_users`` names a forgotten user."""
    digest = hashlib.sha256(f"{workspace_id}\x1f{user_id}".encode()).hexdigest()
    return f"sha256:{digest}"


def spans_json(spans: Sequence[LineSpan]) -> list[list[Any]]:
    return [s.as_json() for s in spans]


def line_spans(location: Mapping[str, Any], content: str) -> list[LineSpan] | None:
    """The chunk's line records, or ``None`` when it has none (or they do not fit ``content``)."""
    raw = location.get(LINES_KEY)
    if not isinstance(raw, list) or not raw:
        return None
    spans: list[LineSpan] = []
    last = 0
    for item in raw:
        if not isinstance(item, list) or len(item) != 4:
            return None
        start, end, author, message = item
        if not (isinstance(start, int) and isinstance(end, int) and last <= start <= end <= len(content)):
            return None
        if author is not None and not isinstance(author, str):
            return None
        spans.append(LineSpan(start, end, author, message))
        last = end
    return spans


def join_lines(texts: Sequence[tuple[str, str | None, Any]], separator: str) -> tuple[str, list[LineSpan]]:
    """``(text, author_id, message_id)`` lines joined by ``separator``: the content and its line records."""
    pieces: list[str] = []
    spans: list[LineSpan] = []
    pos = 0
    for i, (text, author, message) in enumerate(texts):
        if i:
            pieces.append(separator)
            pos += len(separator)
        pieces.append(text)
        spans.append(LineSpan(pos, pos + len(text), author, message))
        pos += len(text)
    return "".join(pieces), spans


def strip_user(
    content: str, location: Mapping[str, Any], author_ids: Sequence[str], user_id: str
) -> ChunkRewrite | None:
    """The chunk without ``user_id``'s lines; ``None``: drop the chunk (nothing left, or no line records)."""
    spans = line_spans(location, content)
    if spans is None:
        return None
    kept = [s for s in spans if s.author_id != user_id]
    if not kept:
        return None
    removed = {str(s.message_id) for s in spans if s.author_id == user_id and s.message_id is not None}
    separator = content[spans[0].end : spans[1].start] if len(spans) > 1 else "\n"
    text, new_spans = join_lines([(content[s.start : s.end], s.author_id, s.message_id) for s in kept], separator)
    new_location = dict(location)
    new_location[LINES_KEY] = spans_json(new_spans)
    ids = location.get("message_ids")
    if isinstance(ids, list):
        new_location["message_ids"] = [i for i in ids if str(i) not in removed]
        if "message_count" in new_location:
            new_location["message_count"] = len(new_location["message_ids"])
    platform_ids = location.get(PLATFORM_IDS_KEY)
    if isinstance(platform_ids, dict):
        new_location[PLATFORM_IDS_KEY] = {k: v for k, v in platform_ids.items() if str(k) not in removed}
    from omoide.stores.units import unit_lexical_of  # not at the top: units reads the line records from here

    return ChunkRewrite(
        content=text,
        lexical=lexical_text(tokenize_for_search(chunk_lexical_text(text))),
        token_count=get_token_counter().count(text),
        location=new_location,
        author_ids=[a for a in author_ids if a != user_id],
        unit_lexical=unit_lexical_of(text, new_location),
    )


__all__ = [
    "LINES_KEY",
    "PLATFORM_IDS_KEY",
    "ChunkRewrite",
    "ErasureAware",
    "ErasureState",
    "LineSpan",
    "check_generation",
    "check_workspace",
    "content_hash",
    "join_lines",
    "line_spans",
    "scrub_source",
    "spans_json",
    "stale_rows",
    "strip_user",
    "user_hash",
]
