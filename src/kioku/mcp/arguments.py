"""Tool arguments checked like a REST body: one mechanism for every tool.

The SDK builds each tool's argument model from the function's signature and ignores
arguments it does not know, so ``set_state(ttl=5)`` (for ``ttl_seconds``) would quietly
store the default. Here every tool's model also derives from ``InputModel``: an unknown
argument is an error naming it (and ``additionalProperties: false`` is advertised),
``source_type``/``trust_tier`` are refused as the server's to stamp, and text must be valid
Unicode with JSON values at most ``MAX_JSON_DEPTH`` deep. Refusals read as kioku's
``invalid_input (field): message``, not as a pydantic dump.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from kioku.mcp.errors import describe
from kioku.mcp.results import tool_text
from kioku.models import InputModel


def strict_arguments(arg_model: type[ArgModelBase]) -> type[ArgModelBase]:
    """``arg_model`` with ``InputModel``'s rules (its fields and SDK helpers unchanged)."""
    return type(arg_model.__name__, (arg_model, InputModel), {"__doc__": None})


class CheckedTool(Tool):
    """A tool whose argument model is strict, whose argument errors are kioku's, and whose
    result (a model) goes out as compact JSON text (``kioku.mcp.results``)."""

    @classmethod
    def checked(cls, fn: Callable[..., Any], **options: Any) -> CheckedTool:
        """``Tool.from_function(fn, **options)`` with strict arguments and their schema."""
        tool = cls.from_function(fn, **options)
        assert isinstance(tool, CheckedTool)
        tool.fn_metadata.arg_model = strict_arguments(tool.fn_metadata.arg_model)
        tool.parameters = tool.fn_metadata.arg_model.model_json_schema(by_alias=True)
        return tool

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            result = await super().run(arguments, context, convert_result=False)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # The arguments did not validate: say which, as every other refusal is said.
            raise ToolError(f"Error executing tool {self.name}: {describe(cause)}") from cause
        if not convert_result or not isinstance(result, BaseModel):
            return result
        try:
            text = tool_text(result)
        except Exception as exc:  # a view that fails is a crash, kept on the server as one
            raise UnexpectedToolError(f"Error executing tool {self.name}") from exc
        return CallToolResult(content=[TextContent(type="text", text=text)])
