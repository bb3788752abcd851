"""The Slack bot's slash commands: ``/ask``, ``/memory`` and ``/memory forget-me``.

``/ask`` answers from the workspace's long-term memory with linked citations, as the
invoking user may see it; ``/memory`` edits the invoking user's own memories; ``forget-me``
erases everything about whoever presses *Erase my data* on its confirmation. Every response
is ephemeral.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncBoltContext, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from omoide.bots._erasure import describe_erasure
from omoide.bots._slack_format import TEXTS, Lang, escape, link, memory_line, to_mrkdwn
from omoide.bots._slack_web import SlackWeb, log, team_of
from omoide.errors import NotFoundError, OmoideError
from omoide.importers._slack_text import slack_text

if TYPE_CHECKING:
    from omoide.answers import AnswerResult

FORGET_VERBS = frozenset({"forget-me", "forget_me", "forgetme"})
"""``/memory`` verbs that ask to erase everything about the invoking user."""
LARGEST_ID = 2**63 - 1
"""Memory ids and list offsets are 64-bit integers in the database: a larger number names nothing."""
FORGET_CONFIRM = "omoide_forget_me_confirm"
FORGET_CANCEL = "omoide_forget_me_cancel"
"""The ``action_id`` of the confirmation's two buttons (their ``value`` is the reply language)."""


class SlackCommands(SlackWeb):
    """The handlers of the slash commands and of the forget-me confirmation's buttons."""

    # ---- /ask

    async def on_ask(
        self,
        ack: AsyncAck,
        command: dict[str, Any],
        respond: AsyncRespond,
        context: AsyncBoltContext,
        client: AsyncWebClient,
    ) -> None:
        """``/ask <question>``: a cited answer from the workspace's long-term memory, ephemeral."""
        await ack()
        raw = str(command.get("text") or "").strip()
        question = slack_text(raw, {}, {}).strip()
        lang = self._lang(question)
        team = team_of(command, context)
        if not question or not team:
            await self.respond(respond, TEXTS[lang]["ask_usage"].format(cmd=self.ask_command))
            return
        try:
            asker = str(command.get("user_id") or "") or None
            # the asker's view: public knowledge plus the private knowledge they are a member of
            result = await self.mem.ask(
                question, workspace=team, asker=asker, language=lang, viewer=asker, public_only=asker is None
            )
        except OmoideError as exc:
            log.warning("slack_ask_failed", workspace=team, code=exc.code, error=exc.message)
            await self.respond(respond, self.error_text(exc, lang))
            return
        urls = await asyncio.gather(*(self.permalink(client, c.hit.chunk, c.hit.jump_url) for c in result.citations))
        await self.respond(respond, self.render_answer(question, result, urls, lang))

    def render_answer(self, question: str, result: AnswerResult, urls: Sequence[str | None], lang: Lang) -> str:
        """The question, the answer in ``mrkdwn``, then one linked line per citation."""
        from omoide.answers.prompt import time_range

        lines = [TEXTS[lang]["question"].format(question=escape(question)), "", to_mrkdwn(result.text)]
        if result.citations:
            lines += ["", TEXTS[lang]["sources"]]
            for citation, url in zip(result.citations, urls, strict=True):
                chunk = citation.hit.chunk
                where = " · ".join(p for p in (chunk.source_title, time_range(chunk.started_at, chunk.ended_at)) if p)
                lines.append(f"[#{citation.number}] {link(url, where or chunk.source_type)}")
        return "\n".join(lines)

    # ---- /memory

    async def on_memory(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
    ) -> None:
        """``/memory add|search|list|delete …`` on the invoking user's own memories, ephemeral."""
        await ack()
        text = str(command.get("text") or "").strip()
        # any whitespace ends the verb: a Japanese IME types U+3000 (and full-width letters and digits)
        verb, rest = [*text.split(None, 1), "", ""][:2]
        verb, rest = unicodedata.normalize("NFKC", verb).lower(), slack_text(rest.strip(), {}, {}).strip()
        lang = self._lang(text)
        t, cmd = TEXTS[lang], self.memory_command
        team, user = team_of(command, context), command.get("user_id")
        if not team or not isinstance(user, str):
            await self.respond(respond, t["memory_usage"].format(cmd=cmd))
            return
        if verb in FORGET_VERBS:
            await self._ask_to_forget(respond, self._lang(rest))
            return
        try:
            reply = await self._memory(verb, rest, team=team, user=user, lang=lang)
        except OmoideError as exc:
            log.warning("slack_memory_failed", workspace=team, verb=verb, code=exc.code, error=exc.message)
            reply = self.error_text(exc, lang)
        await self.respond(respond, reply)

    async def _memory(self, verb: str, rest: str, *, team: str, user: str, lang: Lang) -> str:
        t, cmd = TEXTS[lang], self.memory_command
        if verb in {"add", "remember"} and rest:
            done = await self.mem.remember(rest, workspace=team, user=user, actor=f"user:{user}")
            return t["updated" if done.updated else "remembered"].format(id=done.memory.id)
        if verb in {"search", "recall", "find"} and rest:
            hits = await self.mem.recall(rest, workspace=team, user=user, limit=5)
            if not hits:
                return t["no_match"].format(cmd=cmd)
            return "\n".join(memory_line(h.memory) for h in hits)
        if verb in {"list", "ls"} and (not rest or rest.isdecimal()):
            page = int(rest) if rest else 1
            if page * 20 > LARGEST_ID:
                return t["no_page"].format(page=page)
            records = await self.mem.memories.list(team, user, page=max(page, 1), page_size=20)
            if not records:
                return t["no_page"].format(page=page) if page > 1 else t["no_memories"].format(cmd=cmd)
            return "\n".join([t["page"].format(page=page), *(memory_line(m) for m in records)])
        if verb in {"delete", "remove", "rm", "forget"} and rest:
            number = unicodedata.normalize("NFKC", rest).lstrip("#")
            if not number.isdecimal():
                return t["bad_id"].format(cmd=cmd)
            if int(number) > LARGEST_ID:
                return t["not_found"].format(id=number, cmd=cmd)
            try:
                await self.mem.memories.delete(team, user, int(number), actor=f"user:{user}")
            except NotFoundError:
                return t["not_found"].format(id=number, cmd=cmd)
            return t["deleted"].format(id=number)
        return t["memory_usage"].format(cmd=cmd)

    # ---- /memory forget-me

    async def _ask_to_forget(self, respond: AsyncRespond, lang: Lang) -> None:
        """The ephemeral confirmation of ``/memory forget-me``: what goes, and two buttons."""
        t = TEXTS[lang]

        def button(action_id: str, label: str, **style: str) -> dict[str, Any]:
            text = {"type": "plain_text", "text": label}
            return {"type": "button", "action_id": action_id, "text": text, "value": lang, **style}

        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": t["forget_confirm"]}},
            {
                "type": "actions",
                "elements": [
                    button(FORGET_CONFIRM, t["forget_yes"], style="danger"),
                    button(FORGET_CANCEL, t["forget_no"]),
                ],
            },
        ]
        await respond(text=t["forget_confirm"], blocks=blocks, response_type="ephemeral")

    def _action_lang(self, body: Mapping[str, Any]) -> Lang:
        for action in body.get("actions") or ():
            value = action.get("value") if isinstance(action, Mapping) else None
            if value == "ja":
                return "ja"
            if value == "en":
                return "en"
        return self.mem.settings.answer_language

    async def on_forget_confirm(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
    ) -> None:
        """*Erase my data*: erase everything about the user who pressed it; the confirmation becomes the receipt."""
        await ack()
        lang = self._action_lang(body)
        presser = body.get("user") or {}
        user = presser.get("id") if isinstance(presser, Mapping) else None
        team_of = body.get("team") or {}
        team = context.team_id or (team_of.get("id") if isinstance(team_of, Mapping) else None)
        if not (isinstance(user, str) and user and team):
            log.warning("slack_forget_ignored", reason="missing user or team")
            await respond(text=TEXTS[lang]["failed"].format(code="NO_USER"), replace_original=True)
            return
        try:
            report = await self.mem.forget_user(workspace=team, user=user)
        except OmoideError as exc:
            log.warning("slack_forget_failed", workspace=team, code=exc.code, error=exc.message)
            reply = self.error_text(exc, lang)
        else:
            log.info("slack_user_forgotten", workspace=team, erased=report.as_dict())
            reply = escape(describe_erasure(report.as_dict(), lang, where=TEXTS[lang]["workspace"]))
        await respond(text=reply, replace_original=True, response_type="ephemeral")

    async def on_forget_cancel(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """*Cancel*: the confirmation says nothing was erased."""
        await ack()
        lang = self._action_lang(body)
        await respond(text=TEXTS[lang]["forget_cancelled"], replace_original=True, response_type="ephemeral")


__all__ = ["FORGET_CANCEL", "FORGET_CONFIRM", "FORGET_VERBS", "SlackCommands"]
