"""What a Claude Code hook adds to a turn (``HarnessService``), in process with the real
services: the pinned part is the one renderer every harness shares, its cap cuts whole
memories and says so, memories for a prompt come only when recall is sure enough."""

from __future__ import annotations

from kioku.client.pinned_block import render_pinned_block
from kioku.models import MemoryCreate, RecallFilters
from kioku.models.harness import ClaudeCodeHookEvent, HookOptions
from kioku.runtime import Runtime
from kioku.service.harness_text import PINNED_HEADER
from kioku.service.principal import Principal


def hook(runtime: Runtime, principal: Principal, event: str, **options: object) -> str:
    answer = runtime.harness.claude_code_hook(
        principal,
        ClaudeCodeHookEvent(hook_event_name=event, prompt="Which tea does Alice drink?"),
        HookOptions.model_validate(options),
    )
    return answer.hookSpecificOutput.additionalContext if answer.hookSpecificOutput else ""


def pin(runtime: Runtime, principal: Principal, n: int) -> None:
    for i in range(n):
        summary = f"Rule {i}: " + "keep the release notes short and in plain words " * 3
        runtime.memories.remember(
            principal, "default", MemoryCreate(summary=summary, delivery_mode="always")
        )


def test_the_pinned_part_is_the_shared_renderer_under_one_line(
    runtime: Runtime, principal: Principal
) -> None:
    pin(runtime, principal, 3)
    pinned = runtime.delivery.load_pinned(
        principal, "default", filters=RecallFilters(trust_tier="trusted")
    )
    expected = PINNED_HEADER + render_pinned_block(
        pinned.items, total_available=pinned.total_available, context="default"
    )
    assert hook(runtime, principal, "SessionStart") == expected


def test_a_cap_keeps_whole_memories_and_says_what_it_cut(
    runtime: Runtime, principal: Principal
) -> None:
    pin(runtime, principal, 12)
    block = hook(runtime, principal, "SessionStart", pinned_chars=900)
    assert len(block) <= 900
    assert 'truncated="true" total_available="12"' in block
    shown = block.count("\n- [")
    assert 0 < shown < 12 and f"showing {shown} of 12" in block
    assert block.endswith("</kioku-pinned>\n")


def test_memories_come_only_at_the_confidence_asked_for(
    runtime: Runtime, principal: Principal
) -> None:
    runtime.memories.remember(principal, "default", MemoryCreate(summary="Alice drinks green tea"))
    sure = hook(runtime, principal, "UserPromptSubmit", min_confidence="none")
    assert "<kioku-memories" in sure and "Alice drinks green tea" in sure
    assert "(api, trusted)" in sure  # provenance, as stamped
    nothing_pinned = hook(runtime, principal, "SessionStart")
    assert nothing_pinned == ""  # no pinned memory, no block
    assert hook(runtime, principal, "Stop") == ""


def test_by_default_memories_come_at_moderate_confidence_or_better(
    runtime: Runtime, principal: Principal
) -> None:
    """Issue 32: the prompt's words all in a memory is ``moderate`` without a calibrated
    vector leg (the fake embedder), enough by default; ``high`` asks for more."""
    runtime.memories.remember(principal, "default", MemoryCreate(summary="Alice drinks green tea"))
    assert HookOptions().min_confidence == "moderate"
    assert "Alice drinks green tea" in hook(runtime, principal, "UserPromptSubmit")
    assert hook(runtime, principal, "UserPromptSubmit", min_confidence="high") == ""


def test_the_setup_writes_the_servers_default_level_nowhere() -> None:
    """``kioku setup claude-code`` writes ``min_confidence`` into the hook only when it is
    not the server's default, so both must agree on that default."""
    from kioku.cli.claude_code import HookConfig

    assert HookConfig().min_confidence == HookOptions().min_confidence
    assert ("min_confidence", "high") in HookConfig(min_confidence="high").params()
    assert all(name != "min_confidence" for name, _ in HookConfig().params())
