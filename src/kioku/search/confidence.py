"""How much the result set of a recall deserves to be trusted, in four words."""

from __future__ import annotations

from kioku.vocabulary import Confidence


def judge_confidence(
    top_lexical_rank: int | None,
    top_vector_rank: int | None,
    legs_run: int,
    *,
    crossed: bool = False,
) -> Confidence:
    """Judge from where the top result stands in each leg.

    - ``none``: nothing found.
    - ``high``: both legs ran and both put the top result in their top 3, and they do not
      disagree across languages (``crossed``: the vector leg's top 3 hold a memory in another
      language than the query, which the lexical leg could not read, so its vote is one-sided).
    - ``moderate``: both legs found the top result, or only the lexical leg ran and it matched.
    - ``low``: the top result rests on one leg's opinion only (e.g. semantic similarity with no
      shared words), so treat it as a hint.
    """
    if top_lexical_rank is None and top_vector_rank is None:
        return "none"
    if top_lexical_rank is not None and top_vector_rank is not None:
        agreed = max(top_lexical_rank, top_vector_rank) <= 3 and not crossed
        return "high" if agreed else "moderate"
    if legs_run == 1 and top_lexical_rank is not None:
        return "moderate"
    return "low"
