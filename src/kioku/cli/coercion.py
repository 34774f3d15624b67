"""Typer's coercion of option values, without pydantic for the plain cases.

typer (0.2x) converts every option value through a pydantic ``TypeAdapter`` it builds when the
command runs: importing pydantic and building the adapters costs about 100 ms, a third of what
a command run on every prompt may take (``kioku recall --url``, ``pinned``, ``state get``).
For the plain cases kioku's options use -- text, a whole number within its bounds, one of a
``Literal``'s strings, a list of texts, a flag -- the value is kept as it is, which is what the
adapter returns for it. Anything else, and any value the plain rule does not accept as it
is, goes to typer's own adapter, which converts it or reports the error exactly as before.

``install`` wraps ``typer.core.build_runtime_param``, where typer makes each parameter's
converter. It is typer's private API: if it is not there (another typer), nothing is
wrapped and typer converts everything itself, as before, only slower.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
NOT_PLAIN = object()
"""What a plain converter answers for a value it leaves to typer."""

Converter = Callable[[Any], Any]
_installed: list[Callable[[Any], Any]] = []
"""typer's own ``build_runtime_param``, once ``install`` has wrapped it."""


def install() -> None:
    """Let plain values skip pydantic in every typer command of this process (idempotent)."""
    if _installed:
        return
    try:
        import typer.core as core
        from typer._coercion import RuntimeParam
    except ImportError:  # another typer: it converts everything itself
        return
    typer_build: Callable[[Any], Any] | None = getattr(core, "build_runtime_param", None)
    if typer_build is None:
        return

    @dataclass(frozen=True)
    class PlainFirst(RuntimeParam):  # typer's own base (a frozen dataclass)
        """A value the plain rule accepts as it is; else typer's converter, built then."""

        convert: Converter
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            converted = self.convert(value)
            if converted is not NOT_PLAIN:
                return converted
            return typer_build(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        convert = plain_converter(descriptor)
        if convert is None:
            return typer_build(descriptor)
        try:
            return PlainFirst(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                convert=convert,
                descriptor=descriptor,
            )
        except TypeError:  # typer's RuntimeParam changed shape: let typer do it all
            return typer_build(descriptor)

    _installed.append(typer_build)
    setattr(core, "build_runtime_param", build_runtime_param)  # noqa: B010 (typer's private name)


def plain_converter(descriptor: Any) -> Converter | None:
    """The plain rule for a parameter typer describes (``TypeDescriptor``), or None when its
    type or options (a parser, a file, clamping, case-insensitive choices) are not plain."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return None
    if getattr(info, "click_type", None) is not None:
        return None
    annotation = descriptor.annotation
    if annotation is str:
        return _text
    if annotation is bool:
        return _flag
    if annotation is int and not getattr(info, "clamp", False):
        return _integer(getattr(info, "min", None), getattr(info, "max", None))
    if get_origin(annotation) is Literal and getattr(info, "case_sensitive", False):
        choices = get_args(annotation)
        if all(type(choice) is str for choice in choices):
            return lambda value: value if type(value) is str and value in choices else NOT_PLAIN
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return _texts
    return None


def _text(value: Any) -> Any:
    return value if type(value) is str else NOT_PLAIN


def _flag(value: Any) -> Any:
    return value if type(value) is bool else NOT_PLAIN


def _texts(value: Any) -> Any:
    if isinstance(value, list | tuple) and all(type(item) is str for item in value):
        return list(value)
    return NOT_PLAIN


def _integer(low: float | None, high: float | None) -> Converter:
    def convert(value: Any) -> Any:
        if type(value) is str and _INTEGER.fullmatch(value):
            value = int(value)
        if type(value) is not int:
            return NOT_PLAIN
        if (low is not None and value < low) or (high is not None and value > high):
            return NOT_PLAIN  # typer says what the bounds are
        return value

    return convert
