"""Exactly-once, as a hypothesis state machine on both backends.

Random interleavings of appends (user, assistant and bot turns, short and long), archive runs
(idle and size-triggered), expiry, window resets and re-activation (appending to an archived
session), with random overlap / chunk / filter settings. After every step: the multiset of
message ids in long-term memory equals the messages ever appended, minus those still
unarchived and those the filters dropped; no id twice; every unarchived message still stored.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from datetime import timedelta
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from omoide import Message
from omoide.knowledge.archiver import SessionArchiver
from omoide.models import utcnow
from omoide.sessions import Sessions
from omoide.settings import Settings
from omoide.stores import open_store

from .helpers import tuned

_workspaces = itertools.count(1)
N_SESSIONS = 3


def make_machine(base: Settings) -> type[RuleBasedStateMachine]:
    class ExactlyOnce(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.store: Any = self.run(self._open())
            self.workspace = f"w{next(_workspaces)}"
            self.sessions = Sessions(self.store.sessions, base)
            self.keys = [
                self.sessions.key(platform="discord", workspace=self.workspace, channel="1", user=f"u{i}")
                for i in range(N_SESSIONS)
            ]
            self.appended: list[list[Message]] = [[] for _ in range(N_SESSIONS)]
            self.filtered: set[int] = set()
            self.watermark = [0] * N_SESSIONS
            self.counter = 0
            self.settings = base
            self.archiver = SessionArchiver(self.store.sessions, self.store.knowledge, base)

        async def _open(self) -> Any:
            store = open_store(settings=base)
            await store.open()
            return store

        def run(self, coro: Any) -> Any:
            return self.loop.run_until_complete(coro)

        def teardown(self) -> None:
            self.run(self.store.close())
            self.loop.close()

        @initialize(
            overlap=st.integers(0, 4),
            chunk=st.integers(2, 5),
            min_chars=st.sampled_from([0, 25, 80]),
            threshold=st.integers(2, 8),
        )
        def configure(self, overlap: int, chunk: int, min_chars: int, threshold: int) -> None:
            self.settings = tuned(
                base,
                archive_overlap=overlap,
                chunk_messages=chunk,
                chunk_overlap=1,
                min_session_chars=min_chars,
                archive_message_threshold=threshold,
                session_window=3,
            )
            self.archiver = SessionArchiver(self.store.sessions, self.store.knowledge, self.settings)

        # ------------------------------------------------------------ rules

        @rule(
            which=st.integers(0, N_SESSIONS - 1),
            kind=st.sampled_from(["user", "assistant", "bot"]),
            size=st.sampled_from([2, 12, 40]),
            count=st.integers(1, 4),
        )
        def append(self, which: int, kind: str, size: int, count: int) -> None:
            for _ in range(count):
                self.counter += 1
                text = (f"m{self.counter} " + "あいうえお" * size)[: max(size, 3)]
                if kind == "user":
                    msg = Message.user(text, author_id=f"u{which}", message_id=f"{self.workspace}-{self.counter}")
                elif kind == "assistant":
                    msg = Message.assistant(text, author_id="bot")
                else:
                    msg = Message.user(text, author_id="other-bot", is_bot=True)
                self.appended[which].append(self.run(self.sessions.append(self.keys[which], msg)))

        @rule()
        def archive_idle(self) -> None:
            self._archive(now=utcnow() + timedelta(hours=2))

        @rule()
        def archive_by_size(self) -> None:
            self._archive(now=None)

        @rule()
        def expire(self) -> None:
            self.run(self.sessions.expire_idle(now=utcnow() + timedelta(days=3)))

        @rule(which=st.integers(0, N_SESSIONS - 1))
        def reset_window(self, which: int) -> None:
            if self.appended[which]:
                self.run(self.sessions.reset(self.keys[which]))

        def _archive(self, now: Any) -> None:
            # the filters judge the increment together with the overlap still stored below the watermark
            kept_before = {
                i: [
                    m
                    for m in self.run(self.store.sessions.messages(self.run(self.sessions.get(key)).id))
                    if m.seq <= self.watermark[i]
                ]
                for i, key in enumerate(self.keys)
                if self.appended[i]
            }
            self.run(self.archiver.run(now=now))
            for i, key in enumerate(self.keys):
                if not self.appended[i]:
                    continue
                session = self.run(self.sessions.get(key))
                old, new = self.watermark[i], session.archived_seq
                assert new >= old
                if new > old:
                    batch = [m for m in self.appended[i] if old < m.seq <= new]
                    assert [m.seq for m in batch] == list(range(old + 1, new + 1))
                    conversation = [*kept_before[i], *batch]
                    has_person = any(m.role == "user" and not m.is_bot and m.text.strip() for m in conversation)
                    if not has_person or sum(len(m.text) for m in conversation) < self.settings.min_session_chars:
                        self.filtered.update(m.id for m in batch)
                self.watermark[i] = new

        # ------------------------------------------------------------ invariants

        @invariant()
        def exactly_once(self) -> None:
            archived: list[int] = []
            for source in self.run(self.store.knowledge.list_sources(workspace_id=self.workspace, limit=10_000)):
                ids: set[int] = set()
                for chunk in self.run(self.store.knowledge.chunks_of_source(source.id)):
                    ids.update(chunk.location["message_ids"])
                archived.extend(ids)
            assert len(archived) == len(set(archived)), "a message reached long-term memory twice"
            expected = [
                m.id
                for i in range(N_SESSIONS)
                for m in self.appended[i]
                if m.seq <= self.watermark[i] and m.id not in self.filtered
            ]
            assert Counter(archived) == Counter(expected)

        @invariant()
        def unarchived_messages_are_all_stored(self) -> None:
            for i, key in enumerate(self.keys):
                if not self.appended[i]:
                    continue
                session = self.run(self.sessions.get(key))
                assert session.archived_seq == self.watermark[i]
                assert session.last_seq == len(self.appended[i])
                stored = self.run(self.sessions.messages(key))
                unarchived = [m.id for m in stored if m.seq > session.archived_seq]
                assert unarchived == [m.id for m in self.appended[i] if m.seq > session.archived_seq]
                kept = [m for m in stored if m.seq <= session.archived_seq]
                assert len(kept) <= max(self.settings.archive_overlap, self.settings.session_window)

    return ExactlyOnce


def test_every_message_reaches_long_term_memory_exactly_once(settings: Settings) -> None:
    machine = make_machine(tuned(settings, embedder="hashing"))
    run_state_machine_as_test(
        machine,
        settings=settings_for_machine(),
    )


def settings_for_machine() -> Any:
    return hsettings(
        max_examples=25,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
