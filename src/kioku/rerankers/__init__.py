"""Model rerankers (docs/concepts.md, "The optional model reranker"): a ``Reranker`` scores
candidate texts against a query.

Recall asks one, when configured, about the head of its fused order and blends the answer in
(``blend``); a reranker that fails or is slow leaves the fused order as it was.
"""

from kioku.rerankers.base import Reranker, RerankError
from kioku.rerankers.blend import blend_head

__all__ = ["RerankError", "Reranker", "blend_head"]
