"""A Sleep run in words for ``kioku sleep`` and ``kioku sleep report``.

A phase's counts become a sentence (``edges: decayed 2 edges, pruned 0``), in the order the
phases run; an action becomes a line saying what changed, weights to three places and
importance to two, with the memory ids it touched whole on the line below (``kioku get``
takes them). ``--json`` keeps the exact logged values (every column of an edge, the full
floats).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kioku.wording import count, listing, number, plain

if TYPE_CHECKING:
    from kioku.models.sleep import SleepAction

PHASES = ("sweep", "edges", "merge", "importance", "llm", "rejected")
"""The order the phases run in (and ``rejected``, the proposals refused along the way)."""


def phase_lines(summary: Mapping[str, Any]) -> list[str]:
    """``phase: what it did`` for each phase of a run's summary, in the order they run."""
    names = [n for n in PHASES if n in summary] + [n for n in summary if n not in PHASES]
    return [f"{name}: {_phase(name, summary[name])}" for name in names]


def _phase(name: str, counts: Any) -> str:
    if not isinstance(counts, Mapping):
        return plain(counts)
    told = _TOLD.get(name)
    try:
        return told(counts) if told else _generic(counts)
    except (KeyError, TypeError):  # counts of another shape (an older or newer server)
        return _generic(counts)


def _sweep(c: Mapping[str, Any]) -> str:
    n = c["expired_state_keys"]
    return f"deleted {count(n, 'expired state key')}" if n else "no expired state keys"


def _edges(c: Mapping[str, Any]) -> str:
    return f"decayed {count(c['decayed'], 'edge')}, pruned {c['pruned']}"


def _merge(c: Mapping[str, Any]) -> str:
    compared = count(c["considered"], "memory", "memories")
    return f"compared {compared}, merged {count(c['merged'], 'near-duplicate')}"


def _importance(c: Mapping[str, Any]) -> str:
    return f"considered {count(c['considered'], 'memory', 'memories')}, rescored {c['rescored']}"


def _llm(c: Mapping[str, Any]) -> str:
    summaries = count(c["summaries"], "summary", "summaries")
    return (
        f"merged {c['judged_merged']} on the model's judgement, created "
        f"{count(c['edges_created'], 'edge')}, wrote {summaries} "
        f"({count(c['calls'], 'model call')})"
    )


def _rejected(c: Mapping[str, Any]) -> str:
    total = sum(int(n) for n in c.values())
    by_phase = listing(f"{phase} {n}" for phase, n in c.items())
    return f"refused {count(total, 'proposal')} ({by_phase})"


_TOLD: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "sweep": _sweep, "edges": _edges, "merge": _merge, "importance": _importance,
    "llm": _llm, "rejected": _rejected,
}  # fmt: skip


def _generic(counts: Mapping[str, Any]) -> str:
    return plain(counts) if counts else "nothing"


def action_lines(action: SleepAction, context_id: str) -> tuple[str, str | None]:
    """What an action changed, and the ids it touched (``None`` when it touched no memory)."""
    before = action.before if isinstance(action.before, Mapping) else {}
    after = action.after if isinstance(action.after, Mapping) else {}
    note = f" ({action.note})" if action.note else ""
    target = None if action.target == context_id else _pair(action.target)
    kind = action.kind
    if kind == "supersede":
        winner = str(after.get("superseded_by"))
        return f"merged into its newer near-duplicate{note}", f"{action.target} → {winner}"
    if kind == "edge":
        return _edge(action, before, after) + note, target
    if kind == "tags":
        old, new = plain(before.get("tags") or []), plain(after.get("tags") or [])
        return f"tags {old} → {new}{note}", target
    if kind == "importance":
        old, new = number(before.get("importance")), number(after.get("importance"))
        return f"importance {old} → {new}{note}", target
    if kind == "create":
        return f"wrote a new memory{note}", target
    if kind == "sweep_state":
        return f"deleted {count(int(after.get('deleted', 0)), 'expired state key')}", None
    if kind == "rejected":
        return f"refused a proposal: {action.note or 'no reason given'}", target
    changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    detail = "; ".join(f"{k} {plain(before.get(k))} → {plain(after.get(k))}" for k in changed)
    return f"{kind}: {detail or plain(action.after)}{note}", target


def _edge(action: SleepAction, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    merging = action.phase == "merge"  # a merge moves the loser's edges to the winner
    if not after:
        gone = "dropped with the merged memory" if merging else "pruned"
        return f"edge {gone} (weight was {number(before.get('weight'), 3)})"
    weight = number(after.get("weight"), 3)
    if not before:
        made = "moved to the kept memory" if merging else "linked"
        return f"edge {made}, weight {weight} ({after.get('origin')})"
    return f"edge weight {number(before.get('weight'), 3)} → {weight}"


def _pair(target: str) -> str:
    """A logged target: one memory id, or ``a|b`` for an edge (``a ↔ b``)."""
    return " ↔ ".join(target.split("|"))
