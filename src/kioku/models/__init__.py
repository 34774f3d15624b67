"""Pydantic wire models shared by REST, MCP, SDK and CLI (one module per resource)."""

from kioku.models.base import (
    CONTEXT_NAME_PATTERN,
    MAX_QUERY_CHARS,
    MAX_SUMMARY_CHARS,
    MAX_TAGS,
    SERVER_STAMPED,
    UUID_PATTERN,
    Confidence,
    DeliveryMode,
    EmbeddingStatus,
    InputModel,
    Label,
    SleepMode,
    SourceType,
    TrustTier,
)
from kioku.models.contexts import Context, ContextCreate, ContextPage, ContextUpdate, SearchConfig
from kioku.models.lanes import (
    DEFAULT_STATE_TTL,
    MAX_STATE_TTL,
    STATE_KEY_PATTERN,
    ContextStats,
    Feedback,
    FeedbackCreate,
    FeedbackPage,
    Health,
    State,
    StatePage,
    StateSet,
)
from kioku.models.memories import (
    BatchCreate,
    BatchItemResult,
    BatchResult,
    Memory,
    MemoryCreate,
    MemoryPage,
    MemoryUpdate,
    PinnedItem,
    PinnedResult,
    UpcomingResult,
    check_trigger_window,
)
from kioku.models.recall import (
    RecallFilters,
    RecallHit,
    RecallRequest,
    RecallResult,
    ScoreBreakdown,
    TagFilter,
)

__all__ = [
    "CONTEXT_NAME_PATTERN", "DEFAULT_STATE_TTL", "MAX_QUERY_CHARS", "MAX_STATE_TTL",
    "MAX_SUMMARY_CHARS", "MAX_TAGS", "SERVER_STAMPED", "STATE_KEY_PATTERN", "UUID_PATTERN",
    "BatchCreate", "BatchItemResult", "BatchResult", "Confidence", "Context", "ContextCreate",
    "ContextPage", "ContextStats", "ContextUpdate", "DeliveryMode", "EmbeddingStatus", "Feedback",
    "FeedbackCreate", "FeedbackPage", "Health", "InputModel", "Label", "Memory", "MemoryCreate",
    "MemoryPage", "MemoryUpdate", "PinnedItem", "PinnedResult", "RecallFilters", "RecallHit",
    "RecallRequest", "RecallResult", "ScoreBreakdown", "SearchConfig", "SleepMode", "SourceType",
    "State", "StatePage", "StateSet", "TagFilter", "TrustTier", "UpcomingResult",
    "check_trigger_window",
]  # fmt: skip
