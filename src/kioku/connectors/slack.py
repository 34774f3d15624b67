"""``kioku import slack``: a Slack export into one ``external`` context per channel.

One memory per thread (a message outside any thread is a thread of one): the root and its
replies, each line with its time and speaker, so an answer given in a reply is found with the
question it answers (docs/connectors.md has the measurement behind this choice;
``granularity="message"`` makes one memory per message instead). The thread root's ``ts`` is
the memory's external id, so importing the same export again changes nothing, an edited
message updates its thread in place, and a deleted one is forgotten. Every memory is stamped
``source_type=connector`` and so is ``external``: recall with ``trust_tier=trusted`` never
returns channel text, whatever it says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Literal

from kioku.connectors.slack_export import SlackChannel, SlackMessage, read_export
from kioku.models.base import MAX_THREAD_POSITION
from kioku.service.connectors import ConnectorService, ExternalItem
from kioku.service.principal import Principal

Granularity = Literal["thread", "message"]
Progress = Callable[[int, int], None]
"""Called with (documents done, documents in all)."""

_BATCH = 100
_SUMMARY_CHARS = 200
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,57}$")


@dataclass
class ChannelSummary:
    """What an import did to one channel's context."""

    channel_id: str
    channel: str
    context: str
    counts: Counter[str] = field(default_factory=Counter)


def context_name(channel: SlackChannel) -> str:
    """``slack-<name>``; a name outside the context-name rule (Japanese, too long) falls back
    on the channel id, which Slack never changes (the real name goes in the description)."""
    if _NAME.match(channel.name):
        return f"slack-{channel.name}"
    return f"slack-{channel.id.lower()}"


def channel_documents(
    channel: SlackChannel, granularity: Granularity = "thread", max_content_bytes: int = 1 << 20
) -> tuple[list[ExternalItem], list[str]]:
    """The channel as documents to upsert, and the external ids to forget."""
    groups: dict[str, list[SlackMessage]] = {}
    for message in channel.messages:
        key = message.ts if granularity == "message" else (message.thread_ts or message.ts)
        groups.setdefault(key, []).append(message)
    upserts: list[ExternalItem] = []
    deletes: list[str] = []
    for key in sorted(groups, key=float):
        messages = groups[key]
        if all(m.deleted for m in messages):
            deletes.append(key)  # a tombstone whose replies are gone too: nothing left to say
            continue
        document = _document(channel, key, messages, max_content_bytes)
        # Threads, for recall's neighbours: one memory per Slack thread follows the channel's
        # order; one memory per message follows its Slack thread's. Positions are the ts in
        # microseconds: increasing, and stable when an export adds or drops messages.
        position = ts_position(key)
        if position is not None:
            root = messages[0].thread_ts or key
            thread = f"slack:{channel.id}" + ("" if granularity == "thread" else f"/{root}")
            document = replace(document, thread=thread, thread_position=position)
        upserts.append(document)
    known = set(groups)
    deletes += sorted((ts for ts in channel.deleted_ts if ts not in known), key=float)
    return upserts, deletes


def ts_position(ts: str) -> int | None:
    """A Slack ts (``"1700000000.123456"``) as an integer position: microseconds (``None``
    for a ts that is no such number)."""
    try:
        position = int(Decimal(ts) * 1_000_000)
    except (ArithmeticError, ValueError):
        return None
    return position if 0 <= position <= MAX_THREAD_POSITION else None


def _document(
    channel: SlackChannel, key: str, messages: list[SlackMessage], limit: int
) -> ExternalItem:
    lead = next((m for m in messages if not m.deleted), messages[0])
    summary = _clip_chars(f"{lead.speaker}: {' '.join(lead.text.split())}", _SUMMARY_CHARS)
    if lead.is_reply:
        summary = _clip_chars(f"(in a thread) {summary}", _SUMMARY_CHARS)
    tags = ["slack"]
    if len(messages) > 1:
        tags.append("thread")
    if any(m.is_bot for m in messages):
        tags.append("bot")
    if any(m.files for m in messages):
        tags.append("file")
    content = "\n".join(_line(m) for m in messages)
    return ExternalItem(
        external_id=key,
        summary=summary,
        content=_clip_bytes(content, limit),
        type="slack-thread" if len(messages) > 1 else "slack-message",
        tags=tags,
        source_uri=f"slack://{channel.id}/{key}",
    )


def _line(message: SlackMessage) -> str:
    stamp = f"[{message.time:%Y-%m-%d %H:%M}]"
    if message.deleted:
        return f"{stamp} (a deleted message)"
    who = f"{message.speaker} (bot)" if message.is_bot else message.speaker
    text = message.text + (" (edited)" if message.edited else "")
    lines = [f"{stamp} {who}: {text}"]
    lines += [
        f"  file: {f.name} <{f.url}>" if f.url else f"  file: {f.name}" for f in message.files
    ]
    return "\n".join(lines)


def _clip_chars(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _clip_bytes(text: str, limit: int) -> str:
    """At most ``limit`` UTF-8 bytes (a giant thread keeps its beginning)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    note = "\n… (truncated)"
    return raw[: limit - len(note.encode())].decode("utf-8", errors="ignore") + note


def import_slack(
    service: ConnectorService,
    principal: Principal,
    archive: Path,
    *,
    granularity: Granularity = "thread",
    source: str = "slack",
    progress: Progress | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[ChannelSummary]:
    """Import (or re-import) an export; per channel, what was created, updated, unchanged,
    deleted. ``source`` names the Slack workspace, for kioku workspaces fed by several.
    ``warn`` hears of every part of the export that was not read: a folder of day files no
    listed channel names, and a listed channel with no folder."""
    export = read_export(archive)
    for folder in export.unmatched_folders:
        _say(warn, f"folder {folder}/ matches no channel in channels.json or groups.json: "
                   "its messages were not imported")  # fmt: skip
    for channel in export.channels:
        if not channel.has_folder:
            _say(warn, f"#{channel.name} ({channel.id}) has no folder in the export: "
                       "no messages to import")  # fmt: skip
    limit = service.memories.max_content_bytes
    plans = [(c, *channel_documents(c, granularity, limit)) for c in export.channels]
    total = sum(len(upserts) + len(deletes) for _, upserts, deletes in plans)
    done = 0
    owner = f"slack:{source}"  # the external ids (thread ts) this source owns
    summaries: list[ChannelSummary] = []
    for channel, upserts, deletes in plans:
        name = context_name(channel)
        description = f"Slack #{channel.name} ({channel.id}), from {source}"
        context = service.connector_context(
            principal, "slack", source, channel.id, name, description
        )
        summary = ChannelSummary(channel.id, channel.name, context.name)
        for start in range(0, max(len(upserts), 1), _BATCH):
            chunk = upserts[start : start + _BATCH]
            _tally(summary, service.sync(principal, context, chunk, owner=owner).values())
            done += len(chunk)
            if progress is not None:
                progress(done, total)
        if deletes:
            _tally(summary, service.sync(principal, context, [], deletes, owner=owner).values())
            done += len(deletes)
            if progress is not None:
                progress(done, total)
        summaries.append(summary)
    return summaries


def _say(warn: Callable[[str], None] | None, message: str) -> None:
    if warn is not None:
        warn(message)


def _tally(summary: ChannelSummary, outcomes: Iterable[tuple[str, str | None]]) -> None:
    for status, _ in outcomes:
        summary.counts[status] += 1
