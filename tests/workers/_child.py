"""Runs in worker processes forked by the multiprocessing forkserver (see test_process.py).

Importing it in the forkserver loads omoide, the tiktoken encoding and the search tokenizer
once, so each forked worker starts working within milliseconds instead of a second.
"""

from __future__ import annotations

import sys
from typing import Any

import omoide.engine
import omoide.knowledge.archiver
import omoide.knowledge.embedding
import omoide.providers.local.hashing
import omoide.stores.postgres
import omoide.stores.sqlite
import omoide.workers.service
from omoide.providers.tokens import get_token_counter
from omoide.text import tokenize_for_search

get_token_counter().count("warm up")
tokenize_for_search("天気")
_ = (omoide.engine, omoide.knowledge.archiver, omoide.knowledge.embedding, omoide.providers.local.hashing)
_ = (omoide.stores.postgres, omoide.stores.sqlite)


def noop() -> None:
    """Does nothing (starts the forkserver)."""


def run_worker(overrides: dict[str, Any], log_path: str) -> None:
    """The worker process: ``omoide worker`` with these settings, logging (JSON) to ``log_path``."""
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stderr = log
    omoide.workers.service.main(overrides)
