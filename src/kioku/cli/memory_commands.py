"""``kioku remember`` / ``recall`` / ``list`` / ``get`` / ``forget``: memories from a shell."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from kioku.cli.common import (
    ContextOption,
    CursorOption,
    JsonOption,
    UrlOption,
    call_server,
    cli_client,
    console,
    count,
    escape,
    print_json,
    print_server_json,
)
from kioku.vocabulary import Confidence, DeliveryMode, ForgetMatch, TrustTier
from kioku.wording import number, times

if TYPE_CHECKING:
    from kioku.models import ForgetResult, MemoryDetail

MAX_FORGET = 100
"""``kioku.models.MAX_FORGET`` (a test keeps them equal): the models load only when used."""

DeliveryModeOption = typer.Option(
    None,
    "--delivery-mode",
    help="always: delivered every turn by `kioku pinned` (a rule); on_trigger: only between "
    "--trigger-from and --trigger-until; recall (the default): found by search only.",
    show_default=False,
)
TriggerFromOption = typer.Option(
    None, "--trigger-from", help="on_trigger: start of the window (ISO 8601).", show_default=False
)
TriggerUntilOption = typer.Option(
    None, "--trigger-until", help="on_trigger: end of the window (ISO 8601).", show_default=False
)


def remember(
    summary: str = typer.Argument(..., help="What to remember (1-500 characters)."),
    content: str = typer.Option("", help="Longer text kept with the summary."),
    type: str = typer.Option("note", "--type", "-t", help="Free label, e.g. note, decision."),
    tag: list[str] = typer.Option([], "--tag", help="A tag; repeat for several."),
    importance: float = typer.Option(0.5, min=0.0, max=1.0, help="0..1, nudges ranking."),
    link: list[str] = typer.Option(
        [], "--link", help="Id of a memory of this context to link to; repeat for several."
    ),
    delivery_mode: DeliveryMode | None = DeliveryModeOption,
    trigger_from: datetime | None = TriggerFromOption,
    trigger_until: datetime | None = TriggerUntilOption,
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Write one memory and embed it (stamped source_type=manual; api through --url).
    --delivery-mode always pins it: a rule the agent gets every turn."""
    with cli_client(url) as kioku:
        memory = kioku.remember(
            context,
            summary,
            content=content,
            type=type,
            tags=tag,
            importance=importance,
            delivery_mode=delivery_mode,
            trigger_from=_aware(trigger_from),
            trigger_until=_aware(trigger_until),
            linked_memory_ids=link or None,
            wait=True,
        )
    if as_json:
        print_json(memory)
    else:
        console.print(f"remembered [bold]{memory.id}[/bold] in context {context}")


def update(
    memory_id: str = typer.Argument(..., help="The memory id (whole, as printed)."),
    summary: str | None = typer.Option(None, help="New summary.", show_default=False),
    content: str | None = typer.Option(None, help="New longer text.", show_default=False),
    type: str | None = typer.Option(None, "--type", "-t", help="New type.", show_default=False),
    tag: list[str] | None = typer.Option(
        None, "--tag", help="Replace the tags; repeat for several.", show_default=False
    ),
    importance: float | None = typer.Option(
        None, min=0.0, max=1.0, help="New importance (0..1).", show_default=False
    ),
    delivery_mode: DeliveryMode | None = DeliveryModeOption,
    trigger_from: datetime | None = TriggerFromOption,
    trigger_until: datetime | None = TriggerUntilOption,
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Change some fields of a memory; the others stay. A new summary or content is
    re-embedded (the memory keeps its id and provenance)."""
    given = {
        "summary": summary, "content": content, "type": type, "tags": tag,
        "importance": importance, "delivery_mode": delivery_mode,
        "trigger_from": _aware(trigger_from), "trigger_until": _aware(trigger_until),
    }  # fmt: skip
    changes = {name: value for name, value in given.items() if value is not None}
    if not changes:
        raise typer.BadParameter("give at least one field to change, e.g. --summary")
    with cli_client(url) as kioku:
        memory = kioku.update_memory(context, memory_id, **changes)
    if as_json:
        print_json(memory)
    else:
        console.print(f"updated [bold]{memory.id}[/bold]: {', '.join(changes)}")


def _aware(moment: datetime | None) -> datetime | None:
    """A time typed without a zone is this machine's local time."""
    return moment.astimezone() if moment is not None and moment.tzinfo is None else moment


def recall(
    query: str = typer.Argument(..., help="What to look for, in any language."),
    k: int = typer.Option(5, "-k", min=1, max=100, help="How many results."),
    context: str = ContextOption,
    type: list[str] | None = typer.Option(None, "--type", "-t", help="Only these types."),
    tag: list[str] | None = typer.Option(
        None, "--tag", help="Only memories with any of these tags."
    ),
    trust_tier: TrustTier | None = typer.Option(None, help="trusted: only trusted memories."),
    related: bool = typer.Option(False, "--related", help="Also show graph neighbours."),
    min_confidence: Confidence | None = typer.Option(
        None, help="Show nothing unless recall is at least this sure."
    ),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Hybrid search (BM25 + vectors) in a context."""
    filters = {"type": type, "tags": tag, "trust_tier": trust_tier}
    filters = {n: v for n, v in filters.items() if v}
    if url:  # the quick path: no SDK to import (kioku.cli.rest)
        from kioku.cli.rest import path

        body = {"query": query, "k": k, "filters": filters}
        if related:
            body["include_related"] = True
        if min_confidence:
            body["min_confidence"] = min_confidence
        found = call_server(url, "POST", path("contexts", context, "recall"), body=body)
        if as_json:
            print_server_json(found)
        else:
            show_recall(found)
        return
    with cli_client(url) as kioku:
        result = kioku.recall(
            context,
            query,
            k=k,
            filters=filters,
            include_related=related,
            min_confidence=min_confidence,
        )
    if as_json:
        print_json(result)
    else:
        show_recall(result.model_dump(mode="json"))


def show_recall(result: dict[str, Any]) -> None:
    """A recall's answer for a person (the JSON of RecallResult, from a server or not)."""
    hits = result["results"]
    if not hits and result.get("withheld"):
        withheld = count(result["withheld"], "result")
        console.print(f"{withheld} withheld · confidence {result['confidence']}, below the minimum")
        return
    if not hits:
        console.print("no memories found")
        return
    # A line per hit and its id whole on the next: a table would cut the id (which the next
    # command needs) or squeeze the summary in an 80-column terminal.
    console.print(f"{count(len(hits), 'result')} · confidence {result['confidence']}")
    for i, hit in enumerate(hits, start=1):
        flag = " [red]suspicious[/red]" if hit.get("suspicious") else ""
        console.print(f"{i:>2}  {hit['score']:.4f}  {escape(hit['summary'])}", soft_wrap=True)
        console.print(f"    [dim]{hit['trust_tier']} · {hit['id']}[/dim]{flag}", soft_wrap=True)
    for n in result.get("related") or []:
        console.print(
            f"related {n['activation']:.4f}  {escape(n['summary'])}  [dim]{n['id']}[/dim]"
        )


def list_memories(
    context: str = ContextOption,
    limit: int = typer.Option(20, "--limit", "-k", min=1, max=200, help="Page size."),
    cursor: str | None = CursorOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """List memories newest first (no ranking), one page at a time. Piped, one memory a line:
    id, time, summary, tab-separated (kioku list | cut -f1 | xargs kioku get)."""
    with cli_client(url, embed=False) as kioku:
        page = kioku.list_memories(context, cursor=cursor, limit=limit)
    if as_json:
        print_json(page)
        return
    from kioku.cli.human import Column, print_table

    columns = [Column("id", whole=True, style="dim"), Column("created", whole=True),
               Column("summary")]  # fmt: skip
    rows = [(m.id, f"{m.created_at:%Y-%m-%d %H:%M}", m.summary) for m in page.items]
    if rows:
        print_table(columns, rows)
    else:
        console.print("no memories")
    if page.next_cursor:
        console.print(f"more: --cursor {page.next_cursor}", soft_wrap=True)


def get(
    memory_ids: list[str] = typer.Argument(..., help="The memory id; several for several."),
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Show memories in full, with their edges (--json: one JSON object a line)."""
    with cli_client(url, embed=False) as kioku:
        for n, memory_id in enumerate(memory_ids):
            memory = kioku.get_memory(context, memory_id)
            if as_json:
                print_json(memory)
                continue
            if n:
                console.print()
            show_memory(memory)


def show_memory(memory: MemoryDetail) -> None:
    """One memory for a person: a field a line, empty ones left out, times in UTC, edges
    listed strongest first with the other memory's id whole (``--json`` has every field)."""
    from kioku.cli.human import print_fields, when

    window = ""
    if memory.trigger_from or memory.trigger_until:
        window = f", from {when(memory.trigger_from)} until {when(memory.trigger_until)}"
    accessed = times(memory.access_count)
    if memory.last_accessed_at:
        accessed += f", last {when(memory.last_accessed_at)}"
    print_fields([("id", memory.id), ("summary", memory.summary)])
    if memory.content:
        console.print(f"[bold]content[/bold]:\n{escape(memory.content)}")
    print_fields([
        ("type", memory.type),
        ("tags", ", ".join(memory.tags)),
        ("importance", number(memory.importance)),
        ("delivery mode", memory.delivery_mode + window),
        ("source type", memory.source_type),
        ("source uri", memory.source_uri),
        ("external id", memory.external_id),
        ("thread", memory.thread),
        ("position", None if memory.position is None else str(memory.position)),
        ("trust tier", memory.trust_tier),
        ("suspicious", "yes: reads like instructions; read it as data" if memory.suspicious
         else None),
        ("embedding status", memory.embedding_status),
        ("accessed", accessed),
        ("created at", when(memory.created_at)),
        ("updated at", when(memory.updated_at)),
        ("superseded by", memory.superseded_by),
        ("deleted at", when(memory.deleted_at) if memory.deleted_at else None),
        ("context id", memory.context_id),
        ("workspace id", memory.workspace_id),
    ])  # fmt: skip
    edges = memory.edges
    if not edges:
        console.print("[bold]edges[/bold]: none")
        return
    console.print(f"[bold]edges[/bold]: {len(edges)}, strongest first")
    for edge in edges:
        tier = "" if edge.trust_tier == "trusted" else f", {edge.trust_tier}"
        console.print(
            f"  {edge.memory_id}  weight {number(edge.weight, 3)}, {edge.origin}{tier}",
            soft_wrap=True,
        )


def forget(
    memory_id: str | None = typer.Argument(
        None, help="The memory id; or forget by --query and/or filters instead.", show_default=False
    ),
    context: str = ContextOption,
    purge: bool = typer.Option(False, "--purge", help="Erase for good (not recoverable)."),
    query: str | None = typer.Option(
        None, "--query", "-q", help="Forget what this query matches (previewed first)."
    ),
    type: list[str] | None = typer.Option(None, "--type", "-t", help="Only these types."),
    tag: list[str] | None = typer.Option(
        None, "--tag", help="Only memories with any of these tags."
    ),
    delivery_mode: list[str] | None = typer.Option(
        None, "--delivery-mode", help="always / on_trigger to include pinned memories."
    ),
    trust_tier: TrustTier | None = typer.Option(None, help="Only trusted or external ones."),
    match: ForgetMatch = typer.Option(
        "all_terms", help="all_terms: only memories with every word; recall: recall's top k."
    ),
    k: int = typer.Option(10, "-k", min=1, max=MAX_FORGET, help="At most this many per call."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Forget the previewed set, no prompt."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only preview; print the confirmation."),
    confirm: str | None = typer.Option(
        None, "--confirm", help="Confirmation of an earlier --dry-run of the same command."
    ),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Forget a memory (soft delete; --purge erases it), or what --query/filters match: the
    matches are listed first and forgotten once confirmed, exactly those or nothing."""
    filters = {"type": type, "tags": tag, "delivery_mode": delivery_mode, "trust_tier": trust_tier}
    filters = {name: value for name, value in filters.items() if value}
    by_query = query is not None or bool(filters)
    if memory_id is None:
        if not by_query:
            raise typer.BadParameter("give a memory id, or --query and/or a filter")
        if purge:
            raise typer.BadParameter("only by memory id", param_hint="--purge")
        with cli_client(url, embed=query is not None) as kioku:
            run = functools.partial(
                kioku.forget_by_query, context, query, filters=filters or None, match=match, k=k
            )
            result = run(confirmation=confirm) if confirm else run()
            if result.status == "preview":
                if as_json and (dry_run or not result.matches):
                    print_json(result)
                    return
                if not as_json:
                    show_matches(result)
                if dry_run and result.confirmation:
                    console.print(  # one line: the confirmation must stay copyable
                        f"to forget these: the same command with --confirm {result.confirmation}",
                        soft_wrap=True,
                    )
                if dry_run or not result.matches:
                    return
                if not yes:
                    these = "this memory" if result.count == 1 else f"these {result.count} memories"
                    typer.confirm(
                        f"Forget {these}?",
                        abort=True,
                        err=True,
                    )
                result = run(confirmation=result.confirmation)
        if as_json:
            print_json(result)
        else:
            console.print(f"forgot {count(result.count, 'memory', 'memories')}")
        return
    if by_query or dry_run or confirm:
        raise typer.BadParameter("a memory id, or --query and filters: not both")
    with cli_client(url, embed=False) as kioku:
        if purge:
            kioku.purge(context, memory_id)
        else:
            kioku.forget(context, memory_id)
    console.print(("purged " if purge else "forgot ") + memory_id)


def show_matches(result: ForgetResult) -> None:
    """A preview: what would be forgotten, and what else matched and stays."""
    from kioku.cli.human import Column, print_table

    if not result.matches:
        console.print("nothing matches: nothing to forget")
    else:
        title = f"{count(result.count, 'memory', 'memories')} would be forgotten"
        columns = [Column("id", whole=True, style="dim"), Column("type"), Column("summary")]
        rows = [(memory.id, memory.type, memory.summary) for memory in result.matches]
        print_table(columns, rows, title=title)
    if result.truncated:
        console.print(
            f"truncated: more memories match than these {result.count}; the rest stay "
            "(forget again, or raise -k)"
        )
    if result.pinned_kept:
        console.print(
            f"{count(result.pinned_kept, 'pinned memory', 'pinned memories')} match too and stay "
            "(--delivery-mode always / on_trigger includes them)"
        )


def pinned(
    context: str = ContextOption,
    cap: int = typer.Option(100, help="At most this many (clamped to 1..1000)."),
    trust_tier: TrustTier | None = typer.Option(None, help="trusted: only what may be obeyed."),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Show the pinned set: always-delivered memories and open trigger windows, stably ordered."""
    if url:  # the quick path: no SDK to import (kioku.cli.rest)
        from kioku.cli.rest import path

        params = {"trust_tier": trust_tier, "cap": cap}
        found = call_server(url, "GET", path("contexts", context, "pinned"), params=params)
        if as_json:
            print_server_json(found)
        else:
            show_pinned(found)
        return
    # Locally the delivery service itself, without the REST app: a read needs no embedder,
    # and loading FastAPI would cost more than the read.
    from kioku.cli.common import cli_runtime, handle_errors
    from kioku.models import RecallFilters

    with cli_runtime(embed=False) as runtime, handle_errors():
        filters = RecallFilters(trust_tier=trust_tier) if trust_tier else None
        principal = runtime.local_principal("cli")
        result = runtime.delivery.load_pinned(principal, context, cap=cap, filters=filters)
    if as_json:
        print_json(result)
    else:
        show_pinned(result.model_dump(mode="json"))


def show_pinned(result: dict[str, Any]) -> None:
    """The pinned set for a person (the JSON of PinnedResult, from a server or not)."""
    for item in result["items"]:
        line = escape(f"[{item['lane']}] {item['summary']}")
        flag = " [red]suspicious[/red]" if item.get("suspicious") else ""
        console.print(f"{line}  [dim]{item['trust_tier']} · {item['id']}[/dim]{flag}")
    if result["truncated"]:
        console.print(f"truncated: {len(result['items'])} of {result['total_available']} shown")
    if not result["items"]:
        console.print("nothing pinned")
