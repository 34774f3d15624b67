"""The golden retrieval set: documents, queries with binary relevance, loaded and checked.

The file is YAML (``data/golden.yaml`` ships with the package). Loading checks everything the
runner relies on, so a broken file is one readable error (exit 3), never a wrong figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BUCKETS = (
    "exact",
    "paraphrase",
    "japanese",
    "cross-lingual",
    "trusted-only",
    "pinned-vs-recall",
    "temporal",
    "negative",
    "absent",
    "thread",
    "mixed-language",
    "newer-first",
)
UNANSWERABLE = frozenset({"negative", "absent"})
"""Buckets whose queries have nothing to find: judged by their confidence alone, left out of
every ranking average."""
DATA = Path(__file__).parent / "data"
DEFAULT_GOLDEN = DATA / "golden.yaml"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_DELIVERY = ("on_recall", "always")
_TIERS = ("trusted", "external")


class GoldenSetError(Exception):
    """The golden file is missing or invalid: the gate cannot measure (exit 3)."""


@dataclass(frozen=True)
class GoldenContext:
    """A context the documents are written into."""

    name: str
    trust_tier: str
    description: str = ""


@dataclass(frozen=True)
class GoldenDoc:
    """One memory of the golden corpus; ``age_days`` backdates it (temporal facts)."""

    id: str
    context: str
    summary: str
    content: str = ""
    tags: tuple[str, ...] = ()
    delivery_mode: str = "on_recall"
    importance: float = 0.5
    age_days: int = 0
    thread: str | None = None
    """The conversation it is a turn of; a thread's turns are written in file order."""


@dataclass(frozen=True)
class GoldenQuery:
    """One query, the documents that answer it (binary relevance) and why.

    ``tempting`` names documents that must lose: the external decoys of ``trusted-only``, the
    older, outdated facts of ``temporal``, the same-language distractors of
    ``mixed-language``, and in ``newer-first`` the other version of the fact (the older one,
    or the newer one when the query asks about the past).
    """

    id: str
    bucket: str
    query: str
    relevant: tuple[str, ...]
    rationale: str
    tempting: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoldenSet:
    """The whole set; ``primary`` is the context every query is asked in (with all others)."""

    contexts: tuple[GoldenContext, ...]
    primary: str
    documents: tuple[GoldenDoc, ...]
    queries: tuple[GoldenQuery, ...]

    def doc(self, doc_id: str) -> GoldenDoc:
        """The document ``doc_id`` (it exists: the loader checked every reference)."""
        return next(d for d in self.documents if d.id == doc_id)

    def trust_of(self, doc_id: str) -> str:
        """The trust tier a document gets from its context."""
        context = self.doc(doc_id).context
        return next(c.trust_tier for c in self.contexts if c.name == context)


def read_yaml(path: Path, what: str, error: type[Exception]) -> object:
    """Parse one of the gate's YAML files; unreadable or malformed raises ``error``."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{path} is not valid YAML: {exc}") from exc


def load_golden(path: Path | str = DEFAULT_GOLDEN) -> GoldenSet:
    """Read and check a golden file; any problem raises ``GoldenSetError`` naming the field."""
    path = Path(path)
    return parse_golden(read_yaml(path, "golden set", GoldenSetError), str(path))


def parse_golden(data: object, source: str = "golden set") -> GoldenSet:
    """Build a ``GoldenSet`` from parsed YAML, checking structure and every cross-reference."""
    top = _mapping(data, source, {"version", "primary_context", "contexts", "documents", "queries"})
    if top.get("version") != 1:
        raise GoldenSetError(f"{source}: version must be 1")
    contexts = tuple(_context(c, f"contexts[{i}]") for i, c in enumerate(_list(top, "contexts")))
    names = [c.name for c in contexts]
    _unique(names, "contexts", "name")
    primary = top.get("primary_context")
    if primary not in names:
        raise GoldenSetError(f"primary_context: {primary!r} is not one of the contexts")
    documents = tuple(
        _document(d, f"documents[{i}]", names) for i, d in enumerate(_list(top, "documents"))
    )
    _unique([d.id for d in documents], "documents", "id")
    queries = tuple(_query(q, f"queries[{i}]") for i, q in enumerate(_list(top, "queries")))
    _unique([q.id for q in queries], "queries", "id")
    golden = GoldenSet(contexts, str(primary), documents, queries)
    for index, query in enumerate(queries):
        _check_query_documents(golden, query, f"queries[{index}]")
    return golden


# ---------------------------------------------------------------- the parts


def _context(raw: object, where: str) -> GoldenContext:
    item = _mapping(raw, where, {"name", "trust_tier", "description"})
    name = _text(item, "name", where)
    if not _NAME.match(name):
        raise GoldenSetError(f"{where}.name: {name!r} is not a valid context name")
    tier = _choice(item, "trust_tier", where, _TIERS, default="trusted")
    return GoldenContext(name, tier, _text(item, "description", where, default=""))


def _document(raw: object, where: str, contexts: list[str]) -> GoldenDoc:
    keys = {"id", "context", "summary", "content", "tags", "delivery_mode", "importance"}
    item = _mapping(raw, where, keys | {"age_days", "thread"})
    context = _text(item, "context", where)
    if context not in contexts:
        raise GoldenSetError(f"{where}.context: unknown context {context!r}")
    importance = item.get("importance", 0.5)
    if not isinstance(importance, int | float) or not 0.0 <= importance <= 1.0:
        raise GoldenSetError(f"{where}.importance: must be a number in [0, 1]")
    age = item.get("age_days", 0)
    if not isinstance(age, int) or isinstance(age, bool) or age < 0:
        raise GoldenSetError(f"{where}.age_days: must be a whole number of days, 0 or more")
    return GoldenDoc(
        id=_text(item, "id", where),
        context=context,
        summary=_text(item, "summary", where),
        content=_text(item, "content", where, default=""),
        tags=_ids(item, "tags", where),
        delivery_mode=_choice(item, "delivery_mode", where, _DELIVERY, default="on_recall"),
        importance=float(importance),
        age_days=age,
        thread=_text(item, "thread", where) if "thread" in item else None,
    )


def _query(raw: object, where: str) -> GoldenQuery:
    keys = {"id", "bucket", "query", "relevant", "rationale", "tempting"}
    item = _mapping(raw, where, keys)
    rationale = _text(item, "rationale", where)
    if "\n" in rationale.strip():
        raise GoldenSetError(f"{where}.rationale: must be one line")
    return GoldenQuery(
        id=_text(item, "id", where),
        bucket=_choice(item, "bucket", where, BUCKETS),
        query=_text(item, "query", where),
        relevant=_ids(item, "relevant", where),
        rationale=rationale.strip(),
        tempting=_ids(item, "tempting", where),
    )


def _check_query_documents(golden: GoldenSet, query: GoldenQuery, where: str) -> None:
    """Every id exists, and each bucket has what its check needs."""
    known = {d.id for d in golden.documents}
    for field in ("relevant", "tempting"):
        for doc_id in getattr(query, field):
            if doc_id not in known:
                raise GoldenSetError(f"{where}.{field}: unknown document {doc_id!r}")
    if query.bucket in UNANSWERABLE:
        if query.relevant:
            article = "an" if query.bucket[0] in "aeiou" else "a"
            raise GoldenSetError(
                f"{where}.relevant: {article} {query.bucket} query has no relevant documents"
            )
        return
    if not query.relevant:
        raise GoldenSetError(f"{where}.relevant: needs at least one document")
    if set(query.relevant) & set(query.tempting):
        raise GoldenSetError(f"{where}: a document cannot be both relevant and tempting")
    if query.bucket == "trusted-only":
        if not query.tempting:
            raise GoldenSetError(f"{where}.tempting: trusted-only needs an external decoy")
        if any(golden.trust_of(d) != "trusted" for d in query.relevant):
            raise GoldenSetError(f"{where}.relevant: trusted-only answers must be trusted")
        if any(golden.trust_of(d) != "external" for d in query.tempting):
            raise GoldenSetError(f"{where}.tempting: trusted-only decoys must be external")
    if query.bucket == "mixed-language" and not query.tempting:
        raise GoldenSetError(f"{where}.tempting: mixed-language needs a same-language distractor")
    if query.bucket == "temporal":
        if not query.tempting:
            raise GoldenSetError(f"{where}.tempting: temporal needs the outdated fact")
        newest_stale = min(golden.doc(d).age_days for d in query.tempting)
        if any(golden.doc(d).age_days >= newest_stale for d in query.relevant):
            raise GoldenSetError(
                f"{where}: a temporal answer must be newer than its tempting facts"
            )
    if query.bucket == "newer-first":
        _check_versions(golden, query, where)


def _check_versions(golden: GoldenSet, query: GoldenQuery, where: str) -> None:
    """``newer-first``: the wanted version and the other one(s) are of one context, written
    on different days."""
    if not query.tempting:
        raise GoldenSetError(f"{where}.tempting: newer-first needs the other version")
    docs = [golden.doc(d) for d in (*query.relevant, *query.tempting)]
    if len({doc.context for doc in docs}) != 1:
        raise GoldenSetError(f"{where}: newer-first versions must share one context")
    ages = {golden.doc(d).age_days for d in query.relevant}
    if ages & {golden.doc(d).age_days for d in query.tempting}:
        raise GoldenSetError(f"{where}: newer-first versions must differ in age_days")


# ---------------------------------------------------------------- field readers


def _mapping(raw: object, where: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(raw, dict):
        raise GoldenSetError(f"{where}: expected a mapping")
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise GoldenSetError(f"{where}: unknown field(s) {', '.join(unknown)}")
    return raw


def _list(item: Mapping[str, Any], key: str) -> list[Any]:
    value = item.get(key)
    if not isinstance(value, list) or not value:
        raise GoldenSetError(f"{key}: expected a non-empty list")
    return value


def _text(item: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = item.get(key, default)
    if not isinstance(value, str) or (default is None and not value.strip()):
        raise GoldenSetError(f"{where}.{key}: expected a non-empty string")
    return value


def _ids(item: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise GoldenSetError(f"{where}.{key}: expected a list of strings")
    return tuple(value)


def _choice(
    item: Mapping[str, Any],
    key: str,
    where: str,
    choices: tuple[str, ...],
    default: str | None = None,
) -> str:
    value = item.get(key, default)
    if value not in choices:
        raise GoldenSetError(f"{where}.{key}: {value!r} is not one of {', '.join(choices)}")
    return str(value)


def _unique(values: list[str], where: str, key: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise GoldenSetError(f"{where}: duplicate {key} {value!r}")
        seen.add(value)
