"""``kioku eval harvest``: feedback events → candidate golden items, for a person to review.

Events are grouped by context and normalised query, one candidate per context: the same
question asked in three projects is three candidates, each with its own context's answers. A
memory is proposed as relevant when its helpful votes outnumber its unhelpful ones for that
query in that context (the others are listed as ``unhelpful`` or ``contested``). External
memories of other contexts voted down for the same query are listed as ``tempting`` (one
recall can span several contexts: they are the decoys a ``trusted-only`` item needs). Each
candidate gets a guessed bucket, candidates already in the golden set (same normalised query)
are dropped, and at most ``per_stratum`` are kept per (context, bucket), most-voted first.
Nothing here writes the golden file: candidates are printed or written elsewhere, and adding
them is a reviewed commit (docs/eval.md).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kioku.eval.golden import GoldenSet
from kioku.models import Feedback
from kioku.runtime import Runtime
from kioku.search.tokenize import has_cjk, normalize, tokenize
from kioku.service.principal import Principal
from kioku.storage.records import MemoryRow

_PUNCT = re.compile(r"[\s\W_]+")
PAGE = 200


def normalise_query(text: str) -> str:
    """NFKC, case folding, punctuation and runs of spaces collapsed: the key for duplicates."""
    return _PUNCT.sub(" ", normalize(text)).strip()


@dataclass
class Candidate:
    """One proposed golden query with the memories the feedback says answer it."""

    context: str
    bucket: str
    query: str
    relevant: list[str] = field(default_factory=list)
    unhelpful: list[str] = field(default_factory=list)
    contested: list[str] = field(default_factory=list)
    tempting: list[str] = field(default_factory=list)
    """External memories of other contexts voted down for the same query."""
    events: int = 0
    notes: list[str] = field(default_factory=list)
    memories: dict[str, MemoryRow] = field(default_factory=dict)
    context_names: dict[str, str] = field(default_factory=dict)
    """Context id → name, to name each document's context as the golden file does."""

    def as_dict(self) -> dict[str, object]:
        """A golden-file-shaped draft: documents to add and the query referring to them."""
        docs = [
            {
                "id": f"m-{memory_id[:8]}",
                "context": self.context_names.get(row.context_id, row.context_id),
                "summary": row.summary,
                **({"content": row.content} if row.content else {}),
                **(
                    {} if row.delivery_mode == "on_recall" else {"delivery_mode": row.delivery_mode}
                ),
                "memory_id": memory_id,
                "trust_tier": row.trust_tier,
            }
            for memory_id, row in self.memories.items()
        ]
        return {
            "context": self.context,
            "bucket": self.bucket,
            "query": self.query,
            "relevant": [f"m-{m[:8]}" for m in self.relevant],
            "unhelpful": [f"m-{m[:8]}" for m in self.unhelpful],
            "contested": [f"m-{m[:8]}" for m in self.contested],
            "tempting": [f"m-{m[:8]}" for m in self.tempting],
            "events": self.events,
            "notes": self.notes,
            "rationale": "TODO: one line saying why these memories answer the query",
            "documents": docs,
        }


def guess_bucket(candidate: Candidate) -> str:
    """A first guess for the reviewer (``temporal`` cannot be told from feedback alone)."""
    relevant = [candidate.memories[m] for m in candidate.relevant if m in candidate.memories]
    voted_down = [*candidate.unhelpful, *candidate.tempting]
    others = [candidate.memories[m] for m in voted_down if m in candidate.memories]
    if not relevant:
        return "negative"
    if all(r.trust_tier == "trusted" for r in relevant) and any(
        o.trust_tier == "external" for o in others
    ):
        return "trusted-only"
    if any(r.delivery_mode == "always" for r in relevant):
        return "pinned-vs-recall"
    query_cjk = has_cjk(candidate.query)
    if any(has_cjk(f"{r.summary} {r.content}") != query_cjk for r in relevant):
        return "cross-lingual"
    if query_cjk:
        return "japanese"
    wanted = set(tokenize(candidate.query))
    if any(wanted <= set(tokenize(f"{r.summary} {r.content}")) for r in relevant):
        return "exact"
    return "paraphrase"


def _events(runtime: Runtime, principal: Principal, context: str) -> Iterator[Feedback]:
    cursor: str | None = None
    while True:
        page = runtime.feedback.list_feedback(principal, context, cursor=cursor, limit=PAGE)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def harvest(
    runtime: Runtime,
    principal: Principal,
    golden: GoldenSet,
    *,
    context: str | None = None,
    per_stratum: int | None = None,
) -> list[Candidate]:
    """Candidates from the feedback of every context (or one), stratified and de-duplicated.

    One candidate per (context, normalised query), labelled with that context and holding only
    the votes cast there; its text is the most used spelling there (ties: by name). Every
    context's events are read even for one ``context``: another context's external memories
    voted down for the same query are its ``tempting`` decoys.
    """
    known = {normalise_query(q.query) for q in golden.queries}
    contexts = runtime.contexts.list_contexts(principal).items
    names = {c.id: c.name for c in contexts}
    wanted = None if context is None else runtime.contexts.resolve(principal, context).name
    groups: dict[tuple[str, str], Candidate] = {}
    votes: dict[tuple[str, str], Counter[tuple[str, bool]]] = {}
    spellings: dict[tuple[str, str], Counter[str]] = {}
    for ctx in contexts:
        for event in _events(runtime, principal, ctx.name):
            key = (ctx.name, normalise_query(event.query or ""))
            if not key[1] or key[1] in known:
                continue  # no query to propose, or the golden set already asks it
            group = groups.setdefault(key, Candidate(ctx.name, "", event.query or ""))
            group.events += 1
            if event.note:
                group.notes.append(event.note)
            votes.setdefault(key, Counter())[(event.memory_id, event.helpful)] += 1
            spellings.setdefault(key, Counter())[event.query or ""] += 1
    for key, group in groups.items():
        group.query = _most(spellings[key])
        rows = runtime.bench.memories_by_id(principal, _ids(votes[key]))
        _settle(group, votes[key], rows)
    for (name, query), group in groups.items():
        decoys = _decoys(groups, name, query)
        group.tempting = sorted(decoys)
        group.memories.update(decoys)
        group.context_names = names
        group.bucket = guess_bucket(group)
    kept = [group for (name, _), group in groups.items() if wanted in (None, name)]
    return stratify(kept, per_stratum)


def _decoys(
    groups: dict[tuple[str, str], Candidate], name: str, query: str
) -> dict[str, MemoryRow]:
    """The external memories the other contexts voted down for ``query``."""
    return {
        memory_id: group.memories[memory_id]
        for (other, asked), group in groups.items()
        if asked == query and other != name
        for memory_id in group.unhelpful
        if group.memories[memory_id].trust_tier == "external"
    }


def _most(counts: Counter[str]) -> str:
    """The most counted, ties broken alphabetically (so a run is reproducible)."""
    return min(counts, key=lambda name: (-counts[name], name))


def _ids(votes: Counter[tuple[str, bool]]) -> list[str]:
    return sorted({memory_id for memory_id, _ in votes})


def _settle(group: Candidate, votes: Counter[tuple[str, bool]], rows: dict[str, MemoryRow]) -> None:
    """Split the voted memories by net vote; purged or forgotten ones are left out.

    Rows come from ``memories_by_id``, not ``get_memory``: reading them must not count as an access
    (which would nudge the re-ranker)."""
    for memory_id in _ids(votes):
        row = rows.get(memory_id)
        if row is None or row.deleted_at is not None:
            continue
        net = votes[(memory_id, True)] - votes[(memory_id, False)]
        target = group.relevant if net > 0 else group.unhelpful if net < 0 else group.contested
        target.append(memory_id)
        group.memories[memory_id] = row


def stratify(candidates: Sequence[Candidate], per_stratum: int | None) -> list[Candidate]:
    """Ordered by (context, bucket), most events first; at most ``per_stratum`` per pair."""
    ordered = sorted(candidates, key=lambda c: (c.context, c.bucket, -c.events, c.query))
    if per_stratum is None:
        return ordered
    kept: list[Candidate] = []
    taken: Counter[tuple[str, str]] = Counter()
    for candidate in ordered:
        stratum = (candidate.context, candidate.bucket)
        if taken[stratum] < per_stratum:
            taken[stratum] += 1
            kept.append(candidate)
    return kept


def summary(candidates: Sequence[Candidate]) -> dict[str, dict[str, int]]:
    """How many candidates per context and bucket."""
    table: dict[str, dict[str, int]] = {}
    for candidate in candidates:
        row = table.setdefault(candidate.context, {})
        row[candidate.bucket] = row.get(candidate.bucket, 0) + 1
    return table
