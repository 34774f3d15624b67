"""``kioku import markdown``: a folder of Markdown files, one memory per section.

A section is a heading and the text up to the next heading (of any level); text before the
first heading is a section named after the file (its ``title:``, else its name). Headings
inside fenced code blocks are text. The front matter's ``tags`` become the tags of every
section of the file; ``source_uri`` is the file's path inside the folder, and the external id
``path#anchor`` (GitHub-style anchors), so re-importing changes only the sections that
changed and forgets the sections a file no longer has. Files that disappeared are left alone
(``kioku purge --source-prefix PATH`` erases them). Memories are stamped
``source_type=import`` and take the tier of their context.

The front matter is read without a YAML library: ``key: value`` lines, with ``tags`` as a
``[a, b]`` list, a comma-separated string, or ``- item`` lines.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kioku.errors import InvalidInputError, NotFoundError
from kioku.models import MAX_SUMMARY_CHARS, ContextCreate
from kioku.models.base import CONTEXT_NAME_PATTERN, MAX_THREAD_CHARS
from kioku.service.connectors import ConnectorService, ExternalItem
from kioku.service.principal import Principal

Progress = Callable[[int, int], None]
MARKDOWN_OWNER = "markdown"
"""Owner of the ``path#anchor`` external ids: imports see only these, never a connector's."""

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ANCHOR_DROP = re.compile(r"[^\w\- ]")


@dataclass
class MarkdownFile:
    """One file: its path in the folder, its front matter, its sections (title, body)."""

    path: str
    title: str
    tags: list[str] = field(default_factory=list)
    sections: list[tuple[str, str, str]] = field(default_factory=list)
    """(anchor, heading, body) in file order."""


def parse_front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """(the front matter's keys, the text after it); no front matter: ({}, text)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text  # an opening rule with no closing one is just a rule
    values: dict[str, str | list[str]] = {}
    key = ""  # the key a "- item" line belongs to
    for line in lines[1:end]:
        item = re.match(r"^\s+-\s+(.*)$", line)
        if item and key:
            listed = values.setdefault(key, [])
            if isinstance(listed, list):
                listed.append(_unquote(item.group(1)))
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if pair is None:
            continue
        key = pair.group(1).lower()
        raw = pair.group(2).strip()
        if raw.startswith("[") and raw.endswith("]"):
            values[key] = [_unquote(v) for v in raw[1:-1].split(",") if v.strip()]
        elif raw:
            values[key] = _unquote(raw)
        else:
            values[key] = []
    return values, "\n".join(lines[end + 1 :])


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = unicodedata.normalize("NFKC", heading).strip().lower()
    return _ANCHOR_DROP.sub("", text).replace(" ", "-")


def read_file(root: Path, path: Path) -> MarkdownFile:
    """Split one file into sections."""
    meta, body = parse_front_matter(path.read_text(encoding="utf-8").replace("\r\n", "\n"))
    title = meta.get("title")
    tags = meta.get("tags", [])
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",")]
    doc = MarkdownFile(
        path=path.relative_to(root).as_posix(),
        title=title if isinstance(title, str) and title else path.stem,
        tags=[t for t in tags if t],
    )
    heading, lines, fenced = "", [], False
    seen: Counter[str] = Counter()

    def close() -> None:
        text = "\n".join(lines).strip()
        if text:
            base = anchor(heading) if heading else ""
            slug = base if not seen[base] else f"{base}-{seen[base]}"
            seen[base] += 1
            doc.sections.append((slug, heading or doc.title, text))

    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _HEADING.match(line)
        if found:
            close()
            heading, lines = found.group(2), []
        else:
            lines.append(line)
    close()
    return doc


def folder_documents(root: Path) -> list[tuple[MarkdownFile, list[ExternalItem]]]:
    """Every ``*.md`` file under ``root`` (sorted by path) with its sections as documents."""
    files = sorted(p for p in root.rglob("*.md") if p.is_file())
    result = []
    for path in files:
        doc = read_file(root, path)
        items = []
        # The file is the sections' thread (their order is its order), so recall can bring
        # a section's neighbours along; a path too long to be a thread id has none.
        thread = doc.path if len(doc.path) <= MAX_THREAD_CHARS else None
        for index, (slug, heading, text) in enumerate(doc.sections):
            summary = heading if heading == doc.title else f"{doc.title} — {heading}"
            items.append(
                ExternalItem(
                    external_id=f"{doc.path}#{slug}",
                    summary=summary[:MAX_SUMMARY_CHARS],
                    content=text,
                    type="markdown",
                    tags=doc.tags,
                    source_uri=doc.path,
                    thread=thread,
                    thread_position=None if thread is None else index,
                )
            )
        result.append((doc, items))
    return result


def import_markdown(
    service: ConnectorService,
    principal: Principal,
    root: Path,
    context_ref: str,
    *,
    progress: Progress | None = None,
) -> Counter[str]:
    """Import (or re-import) a folder into ``context_ref`` (created if it is a new name)."""
    if not root.is_dir():
        raise InvalidInputError(f"{root} is not a folder", field="folder")
    try:
        context = service.contexts.resolve(principal, context_ref)
    except NotFoundError:
        if not re.match(CONTEXT_NAME_PATTERN, context_ref):
            raise
        service.contexts.create_context(principal, ContextCreate(name=context_ref))
        context = service.contexts.resolve(principal, context_ref)
    plans = folder_documents(root)
    counts: Counter[str] = Counter()
    total, done = sum(len(items) for _, items in plans), 0
    for doc, items in plans:
        # One sync per file (a file has far fewer than thousands of sections): the sections
        # it no longer has are forgotten in the same transaction.
        outcomes = service.sync(
            principal, context, items, owner=MARKDOWN_OWNER, replace_source=doc.path
        )
        counts.update(status for status, _ in outcomes.values())
        done += len(items)
        if progress is not None:
            progress(done, total)
    return counts
