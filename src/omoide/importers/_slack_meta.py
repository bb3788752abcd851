"""The users and conversations of a Slack export (``users.json`` and the conversation lists).

:class:`ExportMeta` reads display names, bot users and the team id from ``users.json`` (or
``org_users.json``), and the conversations from ``channels.json``, ``groups.json``,
``mpims.json`` and ``dms.json``, each becoming a :class:`Conversation` by its folder.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from omoide.importers._common import ImportRun, optional_str
from omoide.importers._jsonstream import NotAnArray, Rejected
from omoide.importers._model import ImportedChannel
from omoide.importers._slack_archive import READ_ERRORS, ExportTree, one_line

_LISTS = (("channels.json", "channel"), ("groups.json", "group"), ("mpims.json", "mpim"), ("dms.json", "dm"))


def json_object(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _workspace_name(path: Path) -> str:
    name = path.stem if path.suffix.lower() == ".zip" else path.name
    head, sep, _ = name.partition(" Slack export")
    return head if sep else name


# ----------------------------------------------------------------------- metadata


class Conversation:
    """One conversation of the export, as its messages are imported."""

    __slots__ = ("info", "name")

    def __init__(self, info: ImportedChannel) -> None:
        self.info = info
        self.name = info.channel_name


class ExportMeta:
    """Users and conversations of an export."""

    def __init__(self, tree: ExportTree, run: ImportRun, workspace_id: str | None, workspace_name: str | None) -> None:
        self.users: dict[str, str] = {}
        self.bots: set[str] = set()
        teams: Counter[str] = Counter()
        users_file = "users.json" if "users.json" in tree.names else "org_users.json"
        for i, user in enumerate(self._list(tree, users_file, run)):
            if isinstance(user, Rejected):
                run.problem(tree.label(users_file), f"[{i}]", user.problem)
                continue
            if not isinstance(user, dict) or not isinstance(user.get("id"), str):
                run.problem(tree.label(users_file), f"[{i}]", "a user needs a string 'id'")
                continue
            profile = json_object(user.get("profile"))
            name = (
                optional_str(profile.get("display_name"))
                or optional_str(profile.get("real_name"))
                or optional_str(user.get("real_name"))
                or optional_str(user.get("name"))
            )
            if name:
                self.users[user["id"]] = name
            if user.get("is_bot") is True:
                self.bots.add(user["id"])
            if optional_str(user.get("team_id")):
                teams[user["team_id"]] += 1
        self.workspace_id = workspace_id or (teams.most_common(1)[0][0] if teams else None)
        self.workspace_name = workspace_name or _workspace_name(tree.path)
        self._raw: list[tuple[str, str, dict[str, Any]]] = []  # folder, kind, entry
        for file, kind in _LISTS:
            for i, entry in enumerate(self._list(tree, file, run)):
                if isinstance(entry, Rejected):
                    run.problem(tree.label(file), f"[{i}]", entry.problem)
                    continue
                if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                    run.problem(tree.label(file), f"[{i}]", "a conversation needs a string 'id'")
                    continue
                folder = entry["id"] if kind == "dm" else optional_str(entry.get("name")) or entry["id"]
                self._raw.append((folder, kind, entry))
        self.channel_names = {e["id"]: optional_str(e.get("name")) or e["id"] for _, _, e in self._raw}

    @staticmethod
    def _list(tree: ExportTree, name: str, run: ImportRun) -> list[Any]:
        if name not in tree.names:
            return []
        try:
            return tree.read_array(name)
        except NotAnArray as exc:
            run.problem(tree.label(name), "", str(exc))
        except READ_ERRORS as exc:
            run.problem(tree.label(name), "", f"cannot read: {one_line(exc)}")
        return []

    def conversations(self, workspace_id: str, source: str) -> dict[str, Conversation]:
        out: dict[str, Conversation] = {}
        for folder, kind, entry in self._raw:
            name = optional_str(entry.get("name"))
            if kind == "dm":
                members = [self.users.get(m, m) for m in entry.get("members") or () if isinstance(m, str)]
                name = "DM: " + ", ".join(members) if members else entry["id"]
            topic = json_object(entry.get("topic"))
            purpose = json_object(entry.get("purpose"))
            info = ImportedChannel(
                "slack",
                workspace_id,
                self.workspace_name,
                entry["id"],
                name,
                kind=kind,
                topic=optional_str(topic.get("value")) or optional_str(purpose.get("value")),
                is_direct=kind in ("dm", "mpim"),
                is_private=kind != "channel" or entry.get("is_private") is True,
                source=f"{source}/{folder}",
                members=tuple(dict.fromkeys(m for m in entry.get("members") or () if isinstance(m, str) and m)),
            )
            out.setdefault(folder, Conversation(info))
        return out


__all__ = ["Conversation", "ExportMeta", "json_object"]
