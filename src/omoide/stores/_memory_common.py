"""Input checks shared by the memory operations of both backends (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput, NotFoundError
from omoide.stores._knowledge_common import HALFVEC_MAX, check_dimensions, check_int, check_model
from omoide.stores.memories import MemoryChanges, MemoryDraft


def check_scope(workspace_id: object, user_id: object) -> tuple[str, str]:
    """``(workspace_id, user_id)`` as non-empty strings.

    Raises:
        InvalidInput: either is missing, empty or not text.
    """
    for name, value in (("workspace_id", workspace_id), ("user_id", user_id)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{name} must be non-empty text, got {value!r}")
    return str(workspace_id), str(user_id)


def check_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise InvalidInput(f"tags must be a list of text, got {type(tags).__name__}")
    out: list[str] = []
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput(f"tags[{i}] must be non-empty text, got {tag!r}")
        out.append(tag)
    return tuple(out)


def check_draft(draft: object) -> MemoryDraft:
    if not isinstance(draft, MemoryDraft):
        raise InvalidInput(f"insert_memory needs a MemoryDraft, got {type(draft).__name__}")
    check_scope(draft.workspace_id, draft.user_id)
    if not isinstance(draft.content, str) or not draft.content.strip():
        raise InvalidInput("a memory's content must be non-empty text")
    if not isinstance(draft.lexical, str) or not isinstance(draft.category, str) or not draft.category:
        raise InvalidInput("a memory's lexical text and category must be text (the category non-empty)")
    check_tags(draft.tags)
    if not isinstance(draft.metadata, Mapping):
        raise InvalidInput(f"a memory's metadata must be a JSON object, got {type(draft.metadata).__name__}")
    return draft


def check_changes(changes: object) -> MemoryChanges:
    if not isinstance(changes, MemoryChanges):
        raise InvalidInput(f"update_memory needs MemoryChanges, got {type(changes).__name__}")
    if changes.content is not None and (not isinstance(changes.content, str) or not changes.content.strip()):
        raise InvalidInput("a memory's content must be non-empty text")
    if (changes.content is None) != (changes.lexical is None):
        raise InvalidInput("change a memory's content and its lexical text together")
    if changes.category is not None and (not isinstance(changes.category, str) or not changes.category):
        raise InvalidInput("a memory's category must be non-empty text")
    if changes.tags is not None:
        check_tags(changes.tags)
    if changes.metadata is not None and not isinstance(changes.metadata, Mapping):
        raise InvalidInput("a memory's metadata must be a JSON object")
    return changes


def check_memory_vector(model: object, vector: object) -> tuple[str, npt.NDArray[np.float32]]:
    """``(model, float32 vector)``: one-dimensional, finite, within the halfvec range.

    Raises:
        InvalidInput: a bad model name or vector.
    """
    name = check_model(model)
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"the memory's vector is not numeric: {exc}") from exc
    if array.ndim != 1 or array.shape[0] == 0:
        raise InvalidInput(f"the memory's vector must be one-dimensional and non-empty, got shape {array.shape}")
    check_dimensions(array.shape[0])
    if not np.isfinite(array).all() or float(np.abs(array).max()) > HALFVEC_MAX:
        raise InvalidInput("the memory's vector holds NaN, an infinity or a value beyond ±65504")
    return name, array


def check_memory_id(memory_id: object) -> int:
    return check_int("memory_id", memory_id, minimum=1)


def memory_not_found(memory_id: int) -> NotFoundError:
    return NotFoundError(
        f"no memory with id {memory_id} for this user; list the user's memories to see their ids",
        memory_id=memory_id,
    )


__all__ = [
    "check_changes",
    "check_draft",
    "check_memory_id",
    "check_memory_vector",
    "check_scope",
    "check_tags",
    "memory_not_found",
]
