"""What kioku adds to an agent's turn through its harness (Claude Code hooks; docs/integrations.md).

The seed's first primitive promises goals and guardrails in *every* turn, whether or not the
model thinks of calling ``load_pinned``. A hook does that from outside the model: at the start
of a session (``SessionStart``: startup, resume, clear, compact) and before each prompt
(``UserPromptSubmit``) it asks this service for

- the **pinned block** of the configured contexts: byte-identical while the pinned memories
  are unchanged, trusted memories only unless configured otherwise, capped in characters with
  the cut said in the block (``truncated``, ``total_available``), never dropped silently;
- before a prompt, also the **memories relevant to it**: recall's top results, only when the
  recall's confidence is at or above the configured level, each with its id, provenance and
  ``suspicious`` flag, capped;
- optionally (**capture**, off by default) the prompt written as a memory in the thread of the
  Claude Code session (``claude-code:<session_id>``), provenance stamped by the server.

Everything here calls the services an agent's own tools call, as the caller, so roles, the
workspace and the trust filter hold as for any other request.
"""

from __future__ import annotations

from kioku.clock import Clock, system_clock
from kioku.models import MemoryCreate, RecallFilters, RecallRequest
from kioku.models.base import MAX_QUERY_CHARS, MAX_SUMMARY_CHARS
from kioku.models.harness import (
    ClaudeCodeHookAnswer,
    ClaudeCodeHookEvent,
    HookOptions,
    HookSpecificOutput,
)
from kioku.service.delivery import DeliveryService
from kioku.service.guard import operation
from kioku.service.harness_text import pinned_block, recalled_block
from kioku.service.memories import MemoryService
from kioku.service.principal import Principal
from kioku.service.recall import RecallService
from kioku.storage.ports import AuditTrail
from kioku.vocabulary import TrustTier

PINNED_EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})
SESSION_THREAD_PREFIX = "claude-code:"


class HarnessService:
    """Answers an agent harness's hooks with the pinned block and relevant memories."""

    def __init__(
        self,
        store: AuditTrail,
        delivery: DeliveryService,
        recall: RecallService,
        memories: MemoryService,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store  # the guard's audit of refusals
        self.clock = clock
        self.delivery = delivery
        self.recall = recall
        self.memories = memories

    # Capture writes through remember, which asks for "write" itself; the contexts named are
    # resolved by load_pinned and recall, so an allow-listed key reaches only its own.
    @operation("read", in_context=False, allow_listed="resolves")
    def claude_code_hook(
        self, principal: Principal, event: ClaudeCodeHookEvent, options: HookOptions
    ) -> ClaudeCodeHookAnswer:
        """The context a Claude Code hook adds to the turn (``{}``: nothing to add)."""
        name = event.hook_event_name
        if name not in PINNED_EVENTS:
            return ClaudeCodeHookAnswer()  # PreCompact, Stop...: nothing to add
        trust: TrustTier | None = "trusted" if options.trust == "trusted" else None
        blocks = [self._pinned(principal, context, trust, options) for context in options.contexts]
        captured = None
        prompt = (event.prompt or "").strip()
        if name == "UserPromptSubmit" and prompt:
            if options.recall_k > 0:
                blocks.append(self._recalled(principal, prompt, trust, options))
            if options.capture and event.session_id:
                captured = self._capture(principal, event.session_id, prompt, options)
        text = "\n".join(block for block in blocks if block)
        output = HookSpecificOutput(hookEventName=name, additionalContext=text) if text else None
        return ClaudeCodeHookAnswer(hookSpecificOutput=output, captured=captured)

    def _pinned(
        self, principal: Principal, context: str, trust: TrustTier | None, options: HookOptions
    ) -> str:
        filters = RecallFilters(trust_tier=trust) if trust else None
        result = self.delivery.load_pinned(principal, context, filters=filters)
        return pinned_block(context, result, max_chars=options.pinned_chars)

    def _recalled(
        self, principal: Principal, prompt: str, trust: TrustTier | None, options: HookOptions
    ) -> str:
        request = RecallRequest(
            query=prompt[:MAX_QUERY_CHARS],
            k=options.recall_k,
            filters=RecallFilters(trust_tier=trust, delivery_mode=["on_recall"]),
            min_confidence=options.min_confidence,
        )
        if len(options.contexts) > 1:
            request.filters.context_ids = list(options.contexts)
        context = options.contexts[0]
        result = self.recall.recall(principal, context, request)
        if not result.results:  # nothing found, or withheld below ``min_confidence``
            return ""
        return recalled_block(context, result, max_chars=options.recall_chars)

    def _capture(
        self, principal: Principal, session_id: str, prompt: str, options: HookOptions
    ) -> str:
        first_line = prompt.splitlines()[0]
        summary = first_line
        if len(first_line) > MAX_SUMMARY_CHARS:  # the whole prompt is in content
            summary = first_line[: MAX_SUMMARY_CHARS - 1] + "…"
        data = MemoryCreate(
            summary=summary,
            content=prompt if prompt != summary else "",
            type="prompt",
            thread=f"{SESSION_THREAD_PREFIX}{session_id}",
        )
        return self.memories.remember(principal, options.contexts[0], data).id
