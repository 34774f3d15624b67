"""One name per operation on every surface: each service operation is an MCP tool, a REST
operation and an SDK method of the same name, or is listed here with the reason it is not."""

from __future__ import annotations

import inspect

import anyio
from mcp import Client as MCPClient

from kioku import AsyncClient, Client
from kioku.api import create_app
from kioku.mcp import build_mcp
from kioku.runtime import Runtime
from kioku.service.audit import AuditService
from kioku.service.connectors import ConnectorService
from kioku.service.contexts import ContextService
from kioku.service.delivery import DeliveryService
from kioku.service.feedback import FeedbackService
from kioku.service.forgetting import ForgetService
from kioku.service.graph import GraphService
from kioku.service.harness import HarnessService
from kioku.service.keys import KeyService
from kioku.service.memories import MemoryService
from kioku.service.purge import PurgeService
from kioku.service.recall import RecallService
from kioku.service.sleep import SleepService
from kioku.service.state import StateService
from kioku.service.stats import StatsService

SERVICES = (
    ContextService, MemoryService, RecallService, DeliveryService, FeedbackService, StateService,
    StatsService, KeyService, AuditService, GraphService, SleepService, ConnectorService,
    PurgeService, ForgetService, HarnessService,
)  # fmt: skip
INTERNAL = {
    "resolve": "turns a context id or name into a row for the other services",
    "ensure_context": "creates the default context at start-up",
    "authenticate": "turns a bearer key into a principal before any operation runs",
    "key_principal": "turns an OAuth grant's key into a principal before any operation runs",
    "phases": "chooses Sleep's phases for a mode, inside sleep",
    "run_context": "runs Sleep on a resolved context: sleep and the schedule call it",
    "schedule_embedding": "embeds new or changed text now or on the worker, for the writes",
    "sync": "applies documents by external id: ingest and the Slack/Markdown imports call it",
    "connector_context": "makes a Slack import's external contexts, inside kioku import slack",
    "import_memories": "kioku import-jsonl's batch path, on the local database (as sync)",
    "count_imported": "kioku import-jsonl's summary of what the context holds of its file",
    "ranking": "recall's ranking without its side effects: forget_by_query matches with it",
}
NOT_AN_MCP_TOOL = {
    "get_context": "list_contexts gives an agent every context it can use",
    "update_context": "changing a context's trust tier or search config is an operator's call",
    "delete_context": "erasing a whole memory space is an operator's call",
    "purge": "irreversible erasure is an operator's call; agents forget (soft delete)",
    "list_feedback": "the feedback log is for review, not for the agent loop",
    "list_state": "get_state without a key lists the live keys",
    "create_key": "keys are handed out by people (admins), never minted by an agent",
    "list_keys": "key management is for admins, not for the agent loop",
    "revoke_key": "key management is for admins, not for the agent loop",
    "list_audit": "the audit log is for admins and operators",
    "sleep_report": "reviewing a Sleep run action by action is an operator's work",
    "rollback_sleep": "undoing a Sleep run is an admin's review decision",
    "ingest": "connector workers feed contexts over REST/SDK; an agent writes with remember",
    "purge_context": "irreversible erasure is an operator's call; agents forget (soft delete)",
    "purge_source": "irreversible erasure is an operator's call; agents forget (soft delete)",
    "claude_code_hook": "the harness calls it around the model; the agent's tools are "
    "load_pinned and recall",
}
NOT_A_REST_OPERATION = {"purge": "DELETE /contexts/{id}/memories/{memory_id}?purge=true (forget)"}


def service_operations() -> set[str]:
    names = {
        name
        for service in SERVICES
        for name, _ in inspect.getmembers(service, inspect.isfunction)
        if not name.startswith("_")
    }
    return names - set(INTERNAL)


def test_every_service_operation_is_on_every_surface(runtime: Runtime) -> None:
    operations = service_operations()
    spec = create_app(runtime=runtime).openapi()
    rest = {op["operationId"] for path in spec["paths"].values() for op in path.values()}

    async def list_tools() -> set[str]:
        async with MCPClient(build_mcp(runtime)) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    tools = anyio.run(list_tools)
    for name in sorted(operations):
        assert name in rest or name in NOT_A_REST_OPERATION, f"{name}: no REST operation"
        assert name in tools or name in NOT_AN_MCP_TOOL, f"{name}: no MCP tool"
        assert hasattr(Client, name) and hasattr(AsyncClient, name), f"{name}: no SDK method"
    # ...and nothing exists on a surface without a service operation behind it.
    assert tools <= operations, tools - operations
    assert rest - {"health"} <= operations, rest - operations
    for exempt in (NOT_AN_MCP_TOOL, NOT_A_REST_OPERATION):
        assert set(exempt) <= operations, "an exception names an operation that does not exist"
