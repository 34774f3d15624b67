"""Read a standard Slack workspace export (the zip an admin downloads) into plain records.

An export holds ``users.json``, ``channels.json`` (and ``groups.json`` for private channels),
and one folder per channel of daily files ``YYYY-MM-DD.json``, each a list of messages. This
module only reads: it resolves speakers and Slack's markup (``<@U123>``, ``<#C1|name>``,
``<https://..|label>``, ``&amp;``) and applies the edit and delete events an export may hold.
What becomes a memory is decided in ``connectors/slack.py``.
"""

from __future__ import annotations

import html
import json
import re
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from kioku.errors import InvalidInputError

# Membership and housekeeping events: noise for recall, nobody said anything.
SKIPPED_SUBTYPES = frozenset(
    {
        "channel_join", "channel_leave", "group_join", "group_leave", "channel_topic",
        "channel_purpose", "channel_name", "channel_archive", "channel_unarchive",
        "group_topic", "group_purpose", "group_name", "group_archive", "group_unarchive",
        "pinned_item", "unpinned_item", "reminder_add", "bot_add", "bot_remove",
    }
)  # fmt: skip
DELETED_TEXT = "[deleted]"
_MARKUP = re.compile(r"<([^<>]+)>")
_DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")


@dataclass(frozen=True)
class SlackFile:
    """A file shared in a message: kept as a link, never downloaded."""

    name: str
    url: str | None


@dataclass(frozen=True)
class SlackMessage:
    """One message as shown in Slack now: speaker resolved, markup rendered."""

    ts: str
    speaker: str
    text: str
    thread_ts: str | None = None
    """The thread's root ts; equal to ``ts`` for a root, ``None`` outside threads."""
    is_bot: bool = False
    edited: bool = False
    deleted: bool = False
    """A thread root deleted after it had replies (Slack keeps a tombstone)."""
    files: tuple[SlackFile, ...] = ()

    @property
    def time(self) -> datetime:
        return datetime.fromtimestamp(float(self.ts), UTC)

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts


@dataclass
class SlackChannel:
    """A channel and its messages in ts order; ``deleted_ts``: messages deleted by an event."""

    id: str
    name: str
    messages: list[SlackMessage] = field(default_factory=list)
    deleted_ts: set[str] = field(default_factory=set)
    has_folder: bool = False
    """Whether the export holds a folder of day files for it (Slack leaves out empty ones)."""


@dataclass
class SlackExport:
    channels: list[SlackChannel]
    users: dict[str, str]
    unmatched_folders: list[str] = field(default_factory=list)
    """Folders of day files that no listed channel names: their messages were not read."""


def read_export(path: Path) -> SlackExport:
    """Read an export zip (or an unpacked export folder)."""
    try:
        files = _open(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InvalidInputError(
            f"{path.name}: not a Slack export ({exc})", field="archive"
        ) from None
    users = {u["id"]: _user_name(u) for u in _json(files, "users.json", [])}
    listed = [*_json(files, "channels.json", None), *_json(files, "groups.json", [])]
    channel_names = {c["id"]: c.get("name") or c["id"] for c in listed}
    channels: list[SlackChannel] = []
    for info in sorted(listed, key=lambda c: c["id"]):
        channel = SlackChannel(info["id"], channel_names[info["id"]])
        raw: dict[str, dict[str, Any]] = {}
        folder = PurePosixPath(channel.name)
        for name in sorted(n for n in files if PurePosixPath(n).parent == folder):
            if not _DAY_FILE.match(PurePosixPath(name).name):
                continue
            channel.has_folder = True
            for message in _json(files, name, []):
                _collect(message, raw, channel.deleted_ts)
        renderer = _Renderer(users, channel_names)
        for ts in sorted(raw, key=float):
            message = _message(raw[ts], renderer)
            if message is not None:
                channel.messages.append(message)
        channels.append(channel)
    listed_folders = {PurePosixPath(c.name) for c in channels}
    unmatched = sorted(
        {
            str(PurePosixPath(n).parent)
            for n in files
            if _DAY_FILE.match(PurePosixPath(n).name)
            and PurePosixPath(n).parent not in listed_folders
        }
    )
    return SlackExport(channels, users, unmatched)


def _collect(message: dict[str, Any], raw: dict[str, dict[str, Any]], deleted: set[str]) -> None:
    """Apply one line of a day file: a message, or an edit/delete event about one."""
    subtype = message.get("subtype")
    if subtype == "message_deleted":
        gone = message.get("deleted_ts")
        if isinstance(gone, str):
            raw.pop(gone, None)
            deleted.add(gone)
    elif subtype == "message_changed" and isinstance(message.get("message"), dict):
        new = message["message"]
        if isinstance(new.get("ts"), str):
            raw[new["ts"]] = {**raw.get(new["ts"], {}), **new, "edited": new.get("edited", {})}
    elif isinstance(message.get("ts"), str) and subtype not in SKIPPED_SUBTYPES:
        raw[message["ts"]] = message


def _message(raw: dict[str, Any], render: _Renderer) -> SlackMessage | None:
    subtype = raw.get("subtype")
    is_bot = subtype == "bot_message" or "bot_id" in raw
    speaker = render.speaker(raw, is_bot)
    files = tuple(
        SlackFile(
            f.get("name") or f.get("title") or "file", f.get("permalink") or f.get("url_private")
        )
        for f in raw.get("files") or []
        if isinstance(f, dict) and f.get("mode") != "tombstone"
    )
    deleted = subtype == "tombstone"
    text = DELETED_TEXT if deleted else render.text(str(raw.get("text") or ""))
    if not text and not files:
        return None  # nothing anyone could recall (an empty attachment-only bot post)
    thread_ts = raw.get("thread_ts")
    return SlackMessage(
        ts=raw["ts"],
        speaker=speaker,
        text=text,
        thread_ts=thread_ts if isinstance(thread_ts, str) else None,
        is_bot=is_bot,
        edited=bool(raw.get("edited")) and not deleted,
        deleted=deleted,
        files=files,
    )


class _Renderer:
    """Slack's markup → plain text, with names instead of ids."""

    def __init__(self, users: dict[str, str], channels: dict[str, str]) -> None:
        self.users = users
        self.channels = channels

    def speaker(self, raw: dict[str, Any], is_bot: bool) -> str:
        profile = raw.get("user_profile") or {}
        if raw.get("user") in self.users:
            return self.users[raw["user"]]
        name = (
            profile.get("display_name")
            or profile.get("real_name")
            or raw.get("username")
            or (raw.get("bot_profile") or {}).get("name")
            or raw.get("user")
            or raw.get("bot_id")
            or "unknown"
        )
        return str(name)

    def text(self, text: str) -> str:
        return html.unescape(_MARKUP.sub(self._markup, text)).strip()

    def _markup(self, match: re.Match[str]) -> str:
        body = match.group(1)
        target, _, label = body.partition("|")
        if target.startswith("@"):
            return "@" + (self.users.get(target[1:]) or label or target[1:])
        if target.startswith("#"):
            return "#" + (label or self.channels.get(target[1:]) or target[1:])
        if target.startswith("!subteam^"):
            return label or "@team"
        if target.startswith("!"):
            return "@" + (label or target[1:].split("^")[0])
        if target.startswith("mailto:"):
            return label or target.removeprefix("mailto:")
        return f"{label} ({target})" if label and label != target else target


def _user_name(user: dict[str, Any]) -> str:
    profile = user.get("profile") or {}
    return str(
        profile.get("display_name")
        or profile.get("real_name")
        or user.get("real_name")
        or user.get("name")
        or user["id"]
    )


def _open(path: Path) -> dict[str, bytes]:
    """Every JSON file of the export by its path inside it (a zip's top folder dropped)."""
    if path.is_dir():
        found = {str(p.relative_to(path).as_posix()): p.read_bytes() for p in path.rglob("*.json")}
    else:
        with zipfile.ZipFile(path) as archive:
            found = {
                _member_name(info): archive.read(info)
                for info in archive.infolist()
                if info.filename.endswith(".json")
            }
    # Some tools zip the export inside one folder: strip it.
    if "channels.json" not in found and len({PurePosixPath(n).parts[0] for n in found}) == 1:
        found = {str(PurePosixPath(*PurePosixPath(n).parts[1:])): b for n, b in found.items()}
    return found


_UTF8_FLAG = 0x800
# What a name without the UTF-8 flag was written in, most likely first: Info-ZIP's `zip` and
# macOS store UTF-8 bytes without setting the flag; Japanese Windows tools store CP932.
_LEGACY_NAME_ENCODINGS = ("utf-8", "cp932")


def _member_name(info: zipfile.ZipInfo) -> str:
    """A member's real name. Without the UTF-8 flag, ``zipfile`` decodes the stored bytes as
    CP437 (the format's default), which turns ``雑談/`` into mojibake; get the bytes back and
    read them as UTF-8, then CP932, and keep CP437 only when neither fits."""
    if info.flag_bits & _UTF8_FLAG:
        return info.filename
    try:
        raw = info.filename.encode("cp437")
    except UnicodeEncodeError:
        return info.filename
    for encoding in _LEGACY_NAME_ENCODINGS:
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return info.filename


def _json(files: dict[str, bytes], name: str, default: list[Any] | None) -> list[Any]:
    if name not in files:
        if default is None:
            raise InvalidInputError(f"the export has no {name}: not a Slack export", field=name)
        return default
    try:
        value = json.loads(files[name])
    except ValueError as exc:
        raise InvalidInputError(f"{name} is not JSON ({exc})", field=name) from None
    if not isinstance(value, list):
        raise InvalidInputError(f"{name} should hold a list", field=name)
    return [item for item in value if isinstance(item, dict)]
