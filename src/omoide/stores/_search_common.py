"""Argument checks shared by the chunk search methods of both backends (no I/O)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from omoide.stores._knowledge_common import check_model
from omoide.stores.search import SearchFilters, check_filters, check_k, check_query_vector, clean_tokens


def check_vector_query(
    model: object, query: object, filters: object, k: object
) -> tuple[npt.NDArray[np.float32], SearchFilters, int]:
    """``(vector, filters, k)`` of a vector search or ranking, checked in that order (the model first).

    Raises:
        InvalidInput: a bad model, query vector, filters or ``k``.
    """
    check_model(model)
    return check_query_vector(query), check_filters(filters), check_k(k)


def check_lexical_query(tokens: object, filters: object, k: object) -> tuple[list[str], SearchFilters, int]:
    """``(terms, filters, k)`` of a lexical search or ranking (``terms`` may be empty).

    Raises:
        InvalidInput: bad tokens, filters or ``k``.
    """
    return clean_tokens(tokens), check_filters(filters), check_k(k)


__all__ = ["check_lexical_query", "check_vector_query"]
