"""A Sleep run's actions told in words, for the run page.

Each logged action becomes a sentence about the memories it touched, named by their
summaries (not UUIDs), with the values that changed; the many tiny weight decays of a
routine run are grouped into one line, and an action that changed nothing a person can see
is left out: a merge folds the loser's link into the winner's equal one and logs the
winner's edge as ``weight 0.190 → 0.190`` (only its timestamps moved). Values are compared as
they are shown (weights and importance to 3 places), because a line exists to tell a person
what changed and a difference below the shown precision reads as no change. The exact logged
values stay available: the page's table of every action, and the REST report
(``GET /api/v1/sleep/{run_id}``), with each action's full before and after.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kioku.models.sleep import SleepAction

ROUTINE_DECAY = 0.01
"""A weight that moved less than this in an ``edges`` run is routine decay: grouped."""


@dataclass(frozen=True)
class Line:
    """One thing the run did: a sentence, the memories it names (for links), its phase."""

    phase: str
    text: str
    memories: tuple[str, ...] = ()
    seq: int | None = None


@dataclass
class Told:
    lines: list[Line] = field(default_factory=list)
    routine: int = 0
    """Edges decayed by less than ``ROUTINE_DECAY`` (told as one line)."""
    largest_routine: float = 0.0


def summary_words(summary: Mapping[str, Any]) -> list[str]:
    """``{"edges": {"decayed": 6, "pruned": 0}}`` → ``["edges: 6 decayed"]`` (zeros left out)."""
    told: list[str] = []
    for phase, counts in summary.items():
        if not isinstance(counts, Mapping):
            continue
        parts = [f"{value} {name.replace('_', ' ')}" for name, value in counts.items() if value]
        told.append(f"{phase}: {', '.join(parts) if parts else 'nothing to do'}")
    return told


def tell(actions: Sequence[SleepAction], summary_of: Callable[[str], str]) -> Told:
    """The run's actions in words; ``summary_of(memory_id)`` names a memory."""
    told = Told()
    for action in actions:
        if action.kind == "edge" and _is_routine_decay(action):
            told.routine += 1
            told.largest_routine = max(told.largest_routine, abs(_weight_change(action)))
            continue
        if _changes_nothing_shown(action):
            continue  # still in the page's table of every logged action
        told.lines.append(_line(action, summary_of))
    return told


def _line(action: SleepAction, summary_of: Callable[[str], str]) -> Line:
    before, after = action.before or {}, action.after or {}
    name = summary_of
    if action.kind == "supersede":
        kept = str(after.get("superseded_by"))
        note = f" ({action.note})" if action.note else ""
        text = f"Merged «{name(action.target)}» into «{name(kept)}»{note}"
        return Line(action.phase, text, (action.target, kept), action.seq)
    if action.kind == "edge":
        return _edge_line(action, before, after, name)
    if action.kind == "tags":
        old = ", ".join(before.get("tags") or []) or "none"
        new = ", ".join(after.get("tags") or []) or "none"
        text = f"Tags of «{name(action.target)}»: {old} → {new}"
        return Line(action.phase, text, (action.target,), action.seq)
    if action.kind == "importance":
        text = (
            f"Importance of «{name(action.target)}»: "
            f"{_number(before.get('importance'))} → {_number(after.get('importance'))}"
        )
        return Line(action.phase, text, (action.target,), action.seq)
    if action.kind == "create":
        note = f" ({action.note})" if action.note else ""
        text = f"Wrote a new memory «{name(action.target)}»{note}"
        return Line(action.phase, text, (action.target,), action.seq)
    if action.kind == "sweep_state":
        deleted = after.get("deleted", 0)
        return Line(action.phase, f"Deleted {deleted} expired state keys", (), action.seq)
    if action.kind == "rejected":
        return Line(action.phase, f"Refused a proposal: {action.note or 'no reason given'}")
    changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    detail = "; ".join(f"{k}: {before.get(k)} → {after.get(k)}" for k in changed)
    return Line(action.phase, f"{action.kind} {action.target}: {detail}", (), action.seq)


def _edge_line(
    action: SleepAction, before: Mapping[str, Any], after: Mapping[str, Any], name: Callable
) -> Line:
    source, _, target = action.target.partition("|")
    pair = f"«{name(source)}» — «{name(target)}»"
    if not after:
        verb = "Dropped the association" if action.phase == "merge" else "Pruned the association"
        text = f"{verb} {pair} (weight {_number(before.get('weight'))})"
    elif not before:
        text = f"Linked {pair} (weight {_number(after.get('weight'))})"
    elif before.get("source_id") != after.get("source_id") or before.get("target_id") != after.get(
        "target_id"
    ):
        moved = f"«{name(str(after.get('source_id')))}» — «{name(str(after.get('target_id')))}»"
        text = f"Moved the association {pair} to {moved}"
    else:
        text = f"Association {pair}: {'; '.join(_edge_changes(before, after))}"
    return Line(action.phase, text, (source, target), action.seq)


def _edge_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What moved on an edge that stayed, as shown: its weight, origin, trust tier."""
    told = []
    if _number(before.get("weight")) != _number(after.get("weight")):
        told.append(f"weight {_number(before.get('weight'))} → {_number(after.get('weight'))}")
    for name in ("origin", "trust_tier"):
        if before.get(name) != after.get(name):
            told.append(f"{name.replace('_', ' ')} {before.get(name)} → {after.get(name)}")
    return told


def _changes_nothing_shown(action: SleepAction) -> bool:
    """An edge, importance or tags action whose before and after read the same once shown."""
    before, after = action.before, action.after
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return False
    if action.kind == "edge":
        same_pair = all(before.get(k) == after.get(k) for k in ("source_id", "target_id"))
        return same_pair and not _edge_changes(before, after)
    if action.kind == "importance":
        return _number(before.get("importance")) == _number(after.get("importance"))
    if action.kind == "tags":
        return sorted(before.get("tags") or []) == sorted(after.get("tags") or [])
    return False


def _weight_change(action: SleepAction) -> float:
    before, after = action.before or {}, action.after or {}
    return float(after.get("weight", 0.0)) - float(before.get("weight", 0.0))


def _is_routine_decay(action: SleepAction) -> bool:
    before, after = action.before, action.after
    if not before or not after or action.phase != "edges":
        return False
    return abs(_weight_change(action)) < ROUTINE_DECAY


def _number(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else str(value)
