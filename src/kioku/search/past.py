"""Which time a query asks about: ``now``, the ``past`` ("what did we use before Stripe?",
以前の連絡先は？), or it cannot tell (``either``: "when did Alice move to Kyoto?").

Hand-written English and Japanese cues, no model:

- ``past``: a **strong** cue is enough on its own: "used to", "previously", "originally",
  "formerly", "in the past", "back then", "ago", "last year/month/week", "the previous/former
  …", "prior to"; 以前, 昔, かつて, 元々/もともと, 当初, 従来, 去年, 昨年, 先月, 旧…, 移行前,
  変更前, 前は/前の (not 名前/午前/…), and past-progressive verbs (使っていた, 使ってた). A
  **weak** cue ("before", "earlier", "at first", "initially") counts only beside a past-tense
  auxiliary ("did", "was", "were", "had"): "what do I check before merging?" asks about now,
  "what did we use before Slack?" about the past.
- ``either``: no past cue, but the question is in the simple past ("did", "was", "were",
  "had"; a Japanese sentence ending in た/だった/でした/ました): it may ask about an event or
  about what is true now ("which port did we pick?"), so it says nothing about which version of
  a fact it wants.
- ``now``: everything else (the present tense: "which port does staging use?").
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

Tense = Literal["now", "past", "either"]

_STRONG_EN = re.compile(
    r"\b(?:(?<!is )(?<!are )(?<!be )(?<!been )used to|previously|originally|formerly|"
    r"in the past|back then|back when|ago|last (?:year|month|week|quarter|time)|previous|"
    r"former|prior to|was using|were using|had been|had used)\b"
)
_WEAK_EN = re.compile(r"\b(?:before|earlier|at first|initially)\b")
_PAST_VERB_EN = re.compile(r"\b(?:did|was|were|had)\b")
_STRONG_JA = re.compile(
    r"以前|昔|かつて|元々|もともと|当初|従来|去年|昨年|先月|先週|旧|移行前|変更前|"
    r"(?<![名午手直事目空最])前(?:は|の|まで)|"
    r"(?:て|で)(?:い)?た(?:の|か|？|\?|$)|(?:て|で)いました"
)
_PAST_END_JA = re.compile(r"(?:た|だった|でした|ました)(?:の|か|っけ)?[？?。!！]*$")


def query_tense(query: str) -> Tense:
    """Whether ``query`` asks what is true now, what was true before, or cannot tell."""
    text = unicodedata.normalize("NFKC", query).casefold().strip()
    if _STRONG_EN.search(text) or _STRONG_JA.search(text):
        return "past"
    past_verb = bool(_PAST_VERB_EN.search(text))
    if past_verb and _WEAK_EN.search(text):
        return "past"
    if past_verb or _PAST_END_JA.search(text):
        return "either"
    return "now"
