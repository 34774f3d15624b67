"""Does a SQL statement stay on one tenant's shard? The check behind the Citus claim.

kioku's tenant tables are distributed by ``workspace_id`` (``kioku/storage/postgres/
distribution.py``). A statement runs on one node of a Citus cluster when every distributed
table it reads or writes is pinned to one workspace, and joins of distributed tables are
colocated when they equate the tables' ``workspace_id``. :func:`violations` parses a statement
(sqlglot, PostgreSQL dialect) and reports every distributed table instance that is

- not **pinned**: no chain of ``=`` conditions (in a WHERE or JOIN ... ON, joined by AND only,
  never under OR or NOT) from its ``workspace_id`` to a bound value; for an INSERT, no
  ``workspace_id`` column; or
- not **colocated** with the statement's other distributed tables: their ``workspace_id``
  columns are not linked by such conditions (two tables bound to the *same* value are linked;
  to different values they are not, as the values may live on different nodes).

Cross-tenant upkeep (a transaction scoped to all workspaces, ``'*'``: the embedding queue, the
state sweep) is exempt from pinning, not from colocation. DDL is exempt (Citus propagates it).
:class:`SqlRecorder` captures what kioku's own code sends through psycopg, with the bound
parameters and the transaction's scope; migrations and the tests' own SQL are not kioku's
runtime queries and are left out.
"""

from __future__ import annotations

import re
import sys
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlglot
from psycopg.pq import TransactionStatus
from sqlglot import exp
from sqlglot.errors import ParseError

import kioku
from kioku.storage.postgres.connection import ALL_WORKSPACES, SCOPE_SETTING
from kioku.storage.postgres.distribution import DISTRIBUTED, DISTRIBUTION_COLUMN

_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s|%s")
_QUERY_LEVELS = (exp.Select, exp.Update, exp.Delete, exp.Insert)
_DDL = (exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Set)

Term = tuple[str, str]
"""A node of the equality graph: ``("col", instance)``, ``("param", name)`` or
``("value", repr)``."""


@dataclass
class _Analysis:
    """What a statement's text says, whatever its parameters: its distributed table instances
    and the equalities between ``workspace_id`` columns, parameters and literals."""

    instances: dict[str, str] = field(default_factory=dict)  # instance key -> "table alias"
    edges: list[tuple[Term, Term]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)  # placeholder names of the %s, in order


def _name_placeholders(sql: str) -> tuple[str, list[str]]:
    """``%s`` → ``%(_pN)s`` so each positional parameter has a name in the parsed tree."""
    positional: list[str] = []

    def rename(match: re.Match[str]) -> str:
        if match.group(0) == "%%" or match.group(1):
            return match.group(0)
        positional.append(f"_p{len(positional)}")
        return f"%({positional[-1]})s"

    return _PLACEHOLDER.sub(rename, sql), positional


class _Tree:
    """Name resolution over one parsed statement: which table a ``x.workspace_id`` means."""

    def __init__(self, tree: exp.Expr, distributed: frozenset[str]) -> None:
        self.distributed = distributed
        self.ctes: dict[str, exp.Expr] = {
            cte.alias_or_name: cte.this for cte in tree.find_all(exp.CTE)
        }
        self.sources: dict[int, dict[str, tuple[str, exp.Expr | None]]] = {}
        self.analysis = _Analysis()
        for level in tree.find_all(*_QUERY_LEVELS):
            self.sources[id(level)] = self._sources_of(level)

    def _sources_of(self, level: exp.Expr) -> dict[str, tuple[str, exp.Expr | None]]:
        found: list[exp.Expr] = []
        target = level.this if isinstance(level, (exp.Update, exp.Delete, exp.Insert)) else None
        if isinstance(target, exp.Schema):
            target = target.this
        if target is not None:
            found.append(target)
        from_ = level.args.get("from_")
        if from_ is not None:
            found.append(from_.this)
        found += [join.this for join in level.args.get("joins") or []]
        found += list(level.args.get("using") or [])
        sources: dict[str, tuple[str, exp.Expr | None]] = {}
        for source in found:
            alias = source.alias_or_name
            if isinstance(source, exp.Table) and source.name in self.ctes and not source.db:
                sources[alias] = (f"cte {source.name}", self.ctes[source.name])
            elif isinstance(source, exp.Table):
                key = f"{source.name} {alias}#{id(source)}"
                if source.name in self.distributed:
                    self.analysis.instances[key] = f"{source.name} {alias}"
                sources[alias] = (key, None)
            elif isinstance(source, exp.Subquery):
                sources[alias] = (f"subquery {alias}#{id(source)}", source.this)
            else:  # a function in FROM (unnest(...) AS u): no workspace column
                sources[alias] = (f"other {alias}#{id(source)}", None)
        return sources

    def term(self, node: exp.Expr | None) -> Term | None:
        """The graph node an expression stands for, or None when it is no workspace term."""
        while isinstance(node, (exp.Cast, exp.Paren, exp.Alias)):
            node = node.this
        if isinstance(node, exp.Placeholder):
            return ("param", node.name)
        if isinstance(node, exp.Literal):
            return ("value", repr(node.this if node.is_string else node.sql()))
        if isinstance(node, exp.Column) and node.name == DISTRIBUTION_COLUMN:
            return self._resolve(node)
        return None

    def _resolve(self, column: exp.Column) -> Term | None:
        qualifier = column.table
        level: exp.Expr | None = column.parent
        while level is not None:
            sources = self.sources.get(id(level))
            if sources is not None:
                if qualifier and qualifier in sources:
                    return self._source_term(sources[qualifier])
                if not qualifier:
                    tables = [s for s in sources.values() if s[1] is not None or "#" in s[0]]
                    ours = [s for s in tables if s[0] in self.analysis.instances]
                    if len(tables) == 1:
                        return self._source_term(tables[0])
                    if len(ours) == 1:
                        return self._source_term(ours[0])
            level = level.parent
        return None

    def _source_term(self, source: tuple[str, exp.Expr | None]) -> Term:
        key, inner = source
        if inner is not None:  # a CTE or subquery: its workspace_id is what it selects as such
            for projection in inner.selects if isinstance(inner, exp.Select) else []:
                if projection.alias_or_name == DISTRIBUTION_COLUMN:
                    inner_term = self.term(projection)
                    if inner_term is not None:
                        self.analysis.edges.append((("col", key), inner_term))
        return ("col", key)


def _conjunctive(node: exp.Expr) -> bool:
    """True when ``node`` must hold for every row: under a WHERE or JOIN ON by ANDs only."""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Paren)):
        parent = parent.parent
    if isinstance(parent, exp.Where):
        return isinstance(parent.parent, _QUERY_LEVELS)  # not FILTER (WHERE ...) nor ON CONFLICT
    return isinstance(parent, exp.Join)


@lru_cache(maxsize=4096)
def _analyse(sql: str, distributed: frozenset[str]) -> _Analysis:
    named, positional = _name_placeholders(sql)
    try:
        tree = sqlglot.parse_one(named, dialect="postgres")
    except ParseError as error:
        mentioned = set(re.findall(r"[a-z_]+", sql.lower())) & distributed
        analysis = _Analysis(positional=positional)
        if mentioned:
            analysis.problems.append(f"cannot be parsed, so cannot be checked: {error}")
        return analysis
    if isinstance(tree, _DDL):
        return _Analysis(positional=positional)
    resolver = _Tree(tree, distributed)
    analysis = resolver.analysis
    analysis.positional = positional
    for equality in tree.find_all(exp.EQ):
        if _conjunctive(equality):
            left, right = resolver.term(equality.this), resolver.term(equality.expression)
            if left is not None and right is not None:
                analysis.edges.append((left, right))
    for insert in tree.find_all(exp.Insert):
        _insert_edges(insert, resolver)
    return analysis


def _insert_edges(insert: exp.Insert, resolver: _Tree) -> None:
    schema, source = insert.this, insert.expression
    table = schema.this if isinstance(schema, exp.Schema) else schema
    if not isinstance(table, exp.Table) or table.name not in resolver.distributed:
        return
    key = resolver.sources[id(insert)][table.alias_or_name][0]
    columns = [c.name for c in schema.expressions] if isinstance(schema, exp.Schema) else []
    if DISTRIBUTION_COLUMN not in columns:
        resolver.analysis.problems.append(
            f"INSERT INTO {table.name} names no {DISTRIBUTION_COLUMN} column"
        )
        return
    position = columns.index(DISTRIBUTION_COLUMN)
    if isinstance(source, exp.Values):
        rows = [row.expressions for row in source.expressions]
    elif isinstance(source, exp.Select):
        rows = [source.selects]
    else:
        rows = []
    for row in rows:
        value = resolver.term(row[position]) if position < len(row) else None
        if value is not None:
            resolver.analysis.edges.append((("col", key), value))


def _value_key(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return repr(tuple(value))
    return repr(value)


def violations(
    sql: str,
    params: Sequence[Any] | Mapping[str, Any] | None = None,
    *,
    cross_tenant: bool = False,
    distributed: Iterable[str] = DISTRIBUTED,
) -> list[str]:
    """Why ``sql`` (psycopg placeholders, bound to ``params``) would not stay on one tenant's
    shard; empty when it does. ``cross_tenant``: the statement runs in upkeep scoped to every
    workspace, so it need not be pinned (its joins must still be colocated)."""
    analysis = _analyse(sql, frozenset(distributed))
    problems = list(analysis.problems)
    if not analysis.instances:
        return problems
    parent: dict[Term, Term] = {}

    def find(term: Term) -> Term:
        while parent.get(term, term) != term:
            term = parent[term]
        return term

    def union(a: Term, b: Term) -> None:
        parent[find(a)] = find(b)

    for a, b in analysis.edges:
        union(a, b)
    bound: dict[str, Any] = {}
    if isinstance(params, Mapping):
        bound = dict(params)
    elif params is not None:
        bound = dict(zip(analysis.positional, params, strict=False))
    for name, value in bound.items():
        union(("param", name), ("value", _value_key(value)))
    values = [t for edge in analysis.edges for t in edge if t[0] == "value"] + [
        ("value", _value_key(value)) for value in bound.values()
    ]
    pinned_roots = {find(term) for term in values}
    roots: dict[Term, list[str]] = {}
    for key, label in analysis.instances.items():
        root = find(("col", key))
        roots.setdefault(root, []).append(label)
        if not cross_tenant and root not in pinned_roots:
            problems.append(
                f"{label}: not restricted to one workspace "
                f"(no `{DISTRIBUTION_COLUMN} = <value>` reaches it through AND-ed conditions)"
            )
    if len(roots) > 1:
        groups = " / ".join(", ".join(labels) for labels in roots.values())
        problems.append(
            f"tables not joined on equal {DISTRIBUTION_COLUMN} (not colocated): {groups}"
        )
    return problems


@dataclass(frozen=True)
class Statement:
    sql: str
    params: Any
    scope: str | None
    caller: str


_KIOKU = str(Path(kioku.__file__).parent)
_MIGRATIONS = str(Path(kioku.__file__).parent / "storage" / "migrations")
_PASS_THROUGH = ("/psycopg/", "/psycopg_pool/", "/contextlib.py", "/sqlalchemy/", "/alembic/")


def _kioku_caller() -> str | None:
    """``file:line`` of the kioku code that sent the statement; None for migrations, the
    tests' own SQL and anything else that is not kioku's runtime code."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name != __file__ and not any(part in name for part in _PASS_THROUGH):
            if name.startswith(_KIOKU) and not name.startswith(_MIGRATIONS):
                return f"{name[len(_KIOKU) - len('kioku') :]}:{frame.f_lineno}"
            return None
        frame = frame.f_back
    return None


class SqlRecorder:
    """Records what kioku sends through psycopg (``Cursor.execute``/``executemany``,
    ``ServerCursor.execute``) with its parameters and its transaction's workspace scope."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []
        self._scopes: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for cls, method in (
            (psycopg.Cursor, "execute"),
            (psycopg.Cursor, "executemany"),
            (psycopg.ServerCursor, "execute"),
        ):
            monkeypatch.setattr(cls, method, self._wrap(getattr(cls, method), method))

    def _wrap(self, original: Any, method: str) -> Any:
        recorder = self

        def recording(cursor: Any, query: Any, params: Any = None, *args: Any, **kw: Any) -> Any:
            recorder._record(cursor, query, params, many=method == "executemany")
            return original(cursor, query, params, *args, **kw)

        return recording

    def _record(self, cursor: Any, query: Any, params: Any, *, many: bool) -> None:
        connection = cursor.connection
        if connection.info.transaction_status == TransactionStatus.IDLE:
            self._scopes.pop(connection, None)  # a new transaction: no scope until it sets one
        if isinstance(query, (str, bytes)):
            text = query.decode() if isinstance(query, bytes) else query
        else:
            text = query.as_string(connection)
        if many:
            params = next(iter(params), None) if params is not None else None
        if "set_config" in text and params and params[0] == SCOPE_SETTING:
            self._scopes[connection] = params[1]
        caller = _kioku_caller()
        if caller is not None:
            scope = self._scopes.get(connection)
            self.statements.append(Statement(text, params, scope, caller))

    def problems(self) -> list[str]:
        found: dict[tuple[str, str], list[str]] = {}
        for statement in self.statements:
            cross = statement.scope == ALL_WORKSPACES
            for problem in violations(statement.sql, statement.params, cross_tenant=cross):
                found.setdefault((statement.caller, problem), []).append(statement.sql)
        return [
            f"{caller}: {problem}\n    {' '.join(sqls[0].split())[:400]}"
            for (caller, problem), sqls in found.items()
        ]
