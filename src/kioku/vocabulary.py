"""The closed vocabularies shared by the wire models, the storage records, search and the
services: one Literal per enum-like field, defined once.

It imports nothing of kioku, so every layer may import it (storage and search never import
``kioku.models``); ``kioku.models`` re-exports the names for the SDK.
"""

from __future__ import annotations

from typing import Literal

DeliveryMode = Literal["on_recall", "always", "on_trigger"]
SourceType = Literal["manual", "api", "import", "connector", "sleep"]
TrustTier = Literal["trusted", "external"]
SleepMode = Literal["off", "edges_only", "full"]
EmbeddingStatus = Literal["pending", "ready", "failed"]
Confidence = Literal["high", "moderate", "low", "none"]
RunStatus = Literal["running", "done", "failed", "rolled_back"]
SleepTrigger = Literal["schedule", "manual"]
KeyRole = Literal["owner", "admin", "member", "viewer", "connector"]
AuditOutcome = Literal["ok", "denied"]
EdgeOrigin = Literal["hebbian", "declared", "sleep"]
ForgetMatch = Literal["all_terms", "recall"]
