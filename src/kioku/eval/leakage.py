"""Query/answer leakage: a golden query that copies its answer measures string matching, not
recall. Pure functions over the golden set, with kioku's own tokenizer.

Two detectors, run on every query outside the ``exact`` bucket (copying is that bucket's point)
against each of its relevant documents:

- ``token_overlap``: the share of the query's distinct tokens found in the document is at least
  ``OVERLAP_LIMIT`` and at least ``MIN_SHARED`` tokens are shared (a two-word query sharing both
  words with its answer is a normal question, not a copy);
- ``rare_ngram``: the query and the document share a word ``NGRAM``-gram (consecutive tokens)
  that at most ``RARE_DOCS`` documents of the corpus contain: a phrase lifted from the answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kioku.eval.golden import GoldenDoc, GoldenSet
from kioku.search.tokenize import tokenize

OVERLAP_LIMIT = 0.75
MIN_SHARED = 3
NGRAM = 3
RARE_DOCS = 2
EXEMPT_BUCKETS = frozenset({"exact"})


@dataclass(frozen=True)
class Leak:
    """One query that gives its answer away."""

    kind: str
    query_id: str
    doc_id: str
    detail: str


def doc_tokens(doc: GoldenDoc) -> list[str]:
    """The tokens a document is indexed under (as ``lexical_text``: summary, content, tags)."""
    return tokenize(" ".join([doc.summary, doc.content, *doc.tags]))


def ngrams(tokens: Sequence[str], n: int = NGRAM) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens."""
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def overlap(query_tokens: Sequence[str], document_tokens: Sequence[str]) -> tuple[float, int]:
    """(share of the query's distinct tokens found in the document, how many that is)."""
    wanted = set(query_tokens)
    if not wanted:
        return 0.0, 0
    shared = wanted & set(document_tokens)
    return len(shared) / len(wanted), len(shared)


def find_leaks(golden: GoldenSet) -> list[Leak]:
    """Every leak of every non-exempt query, in file order."""
    tokens = {doc.id: doc_tokens(doc) for doc in golden.documents}
    grams = {doc_id: ngrams(toks) for doc_id, toks in tokens.items()}
    frequency: Counter[tuple[str, ...]] = Counter(g for doc in grams.values() for g in doc)
    leaks: list[Leak] = []
    for query in golden.queries:
        if query.bucket in EXEMPT_BUCKETS:
            continue
        query_tokens = tokenize(query.query)
        query_grams = ngrams(query_tokens)
        for doc_id in query.relevant:
            share, count = overlap(query_tokens, tokens[doc_id])
            if share >= OVERLAP_LIMIT and count >= MIN_SHARED:
                detail = f"{count} of {len(set(query_tokens))} query tokens ({share:.0%})"
                leaks.append(Leak("token_overlap", query.id, doc_id, detail))
            rare = sorted(g for g in query_grams & grams[doc_id] if frequency[g] <= RARE_DOCS)
            if rare:
                shown = ", ".join(" ".join(g) for g in rare[:3])
                leaks.append(Leak("rare_ngram", query.id, doc_id, f"shares {shown}"))
    return leaks
