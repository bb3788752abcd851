"""``omoide reindex --compact`` on the 3-node Citus cluster: the store tests of
``tests/stores/test_compact_line_vectors.py`` (imported: one contract) on the cluster, where the
page read and the compare-and-set ``UPDATE`` run across the shards of ``chunk_embeddings``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))

from test_compact_line_vectors import (  # noqa: F401
    Raw,
    test_a_vector_re_embedded_meanwhile_is_not_overwritten,
    test_older_forms_are_rewritten_page_by_page_and_read_back_the_same,
    test_one_column_in_an_older_form_is_rewritten_alone,
    test_the_job_pages_with_progress_and_stops_when_asked,
    test_vectors_written_now_are_int8_and_left_alone,
)


@pytest.fixture
def opened(store: Any, citus_url: str) -> tuple[Any, Raw]:
    """The cluster's store, and its database seen directly."""
    return store, Raw(citus_url)
