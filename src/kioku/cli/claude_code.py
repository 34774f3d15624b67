"""``kioku setup claude-code``: kioku inside Claude Code, for every project (docs/integrations.md).

Two files of the user's, merged, never clobbered:

- ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set): the MCP server
  at **user scope** (top-level ``mcpServers.kioku``), so ``claude mcp list`` shows it from any
  folder: ``http`` to ``<KIOKU_URL>/mcp`` when a server answers there, else ``stdio``
  running this installation's own ``kioku mcp`` (a clone's ``.venv``, pipx and uv alike);
- ``~/.claude/settings.json``: hooks on ``SessionStart`` (startup, resume, clear, compact)
  and ``UserPromptSubmit`` that add the pinned rules, and for a prompt the memories recall
  finds for it, to every turn. ``http`` hooks (Claude Code posts the event to the server) or
  ``command`` hooks (``kioku-hook``, which fails open). The API key is never written: the
  hooks and the MCP entry read ``$KIOKU_API_KEY`` (an ``http`` hook only through
  ``allowedEnvVars``), ``kioku-hook`` also a mode-0600 key file.

Each file's bytes before the first setup are kept beside it (``*.kioku-backup``); setup is
idempotent (kioku's entries are replaced, others kept in place) and ``--remove`` takes
kioku's entries out again, giving back the very bytes it found when nothing else changed.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER_NAME = "kioku"
HOOK_PATH = "/api/v1/hooks/claude-code"
SESSION_MATCHER = "startup|resume|clear|compact"
HOOK_TIMEOUT_SECONDS = 2
BACKUP_SUFFIX = ".kioku-backup"


@dataclass(frozen=True)
class HookConfig:
    """What the hooks ask of the server (``HookOptions`` on the server's side)."""

    contexts: tuple[str, ...] = ("default",)
    trust: str = "trusted"
    min_confidence: str = "moderate"
    """The server's default too (``models.harness.DEFAULT_MIN_CONFIDENCE``): only another
    level is written into the hook."""
    capture: bool = False

    def params(self) -> list[tuple[str, str]]:
        found = [("context", c) for c in self.contexts]
        if self.trust != "trusted":
            found.append(("trust", self.trust))
        if self.min_confidence != "moderate":
            found.append(("min_confidence", self.min_confidence))
        if self.capture:
            found.append(("capture", "true"))
        return found


@dataclass(frozen=True)
class Paths:
    """Claude Code's user files."""

    global_config: Path
    settings: Path

    @classmethod
    def of(cls, home: Path, config_dir: str | None = None) -> Paths:
        if config_dir:
            return cls(Path(config_dir) / ".claude.json", Path(config_dir) / "settings.json")
        return cls(home / ".claude.json", home / ".claude" / "settings.json")


def installed_command(name: str) -> str:
    """This installation's own ``kioku``/``kioku-hook`` (beside the running interpreter: a
    clone's ``.venv/bin``, pipx's or uv's tool environment), absolute."""
    beside = Path(sys.executable).parent / name
    return str(beside if beside.exists() else Path(sys.argv[0]).resolve().parent / name)


def mcp_entry(url: str, server_answers: bool) -> dict[str, Any]:
    """The user-scope MCP server: HTTP to a running server, else stdio ``kioku mcp``."""
    if server_answers:
        return {
            "type": "http",
            "url": f"{url.rstrip('/')}/mcp",
            "headers": {"Authorization": "Bearer ${KIOKU_API_KEY:-}"},
        }
    return {"type": "stdio", "command": installed_command("kioku"), "args": ["mcp"], "env": {}}


def hook_handler(form: str, url: str, config: HookConfig) -> dict[str, Any]:
    """One hook handler of Claude Code's settings: ``http`` or ``command``."""
    if form == "http":
        from urllib.parse import urlencode

        query = urlencode(config.params())
        return {
            "type": "http",
            "url": f"{url.rstrip('/')}{HOOK_PATH}" + (f"?{query}" if query else ""),
            "headers": {"Authorization": "Bearer $KIOKU_API_KEY"},
            "allowedEnvVars": ["KIOKU_API_KEY"],
            "timeout": HOOK_TIMEOUT_SECONDS,
        }
    words = [installed_command("kioku-hook"), "--url", url.rstrip("/")]
    for name, value in config.params():
        words += [f"--{name.replace('_', '-')}"] + ([] if name == "capture" else [value])
    return {
        "type": "command",
        "command": shlex.join(words),
        "timeout": HOOK_TIMEOUT_SECONDS + 1,
    }


def hook_groups(handler: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The matcher group kioku adds to each event it answers."""
    return {
        "SessionStart": {"matcher": SESSION_MATCHER, "hooks": [handler]},
        "UserPromptSubmit": {"hooks": [handler]},
    }


def is_kiokus(handler: Any) -> bool:
    """Whether a hook handler is one kioku installed (its endpoint or ``kioku-hook``)."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "http":
        return HOOK_PATH in str(handler.get("url", ""))
    words = str(handler.get("command", "")).split()
    return bool(words) and Path(words[0].strip("'\"")).name == "kioku-hook"


def without_kioku_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with kioku's hook handlers taken out (groups and events left empty by that
    removed too); everything else as it was, in its order."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    kept_events: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept_events[event] = groups
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            others = [h for h in handlers if not is_kiokus(h)]
            if others or not handlers:
                kept_groups.append(
                    group if len(others) == len(handlers) else {**group, "hooks": others}
                )
        if kept_groups:
            kept_events[event] = kept_groups
    result = dict(settings)
    if kept_events:
        result["hooks"] = kept_events
    else:
        result.pop("hooks")
    return result


def with_kioku_hooks(settings: dict[str, Any], handler: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with kioku's hooks (and no older ones of kioku's), others untouched."""
    result = without_kioku_hooks(settings)
    hooks = dict(result.get("hooks") or {})
    for event, group in hook_groups(handler).items():
        hooks[event] = [*hooks.get(event, []), group]
    result["hooks"] = hooks
    return result


def with_mcp_server(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    servers = dict(config.get("mcpServers") or {})
    servers[SERVER_NAME] = entry
    return {**config, "mcpServers": servers}


def without_mcp_server(config: dict[str, Any]) -> dict[str, Any]:
    servers = dict(config.get("mcpServers") or {})
    if SERVER_NAME not in servers:
        return config
    servers.pop(SERVER_NAME)
    result = dict(config)
    if servers:
        result["mcpServers"] = servers
    else:
        result.pop("mcpServers")
    return result


class SettingsError(Exception):
    """A settings file kioku cannot read as JSON (it is left alone)."""


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        message = f"{path} is not valid JSON ({exc}); fix it, then run this again"
        raise SettingsError(message) from None
    if not isinstance(value, dict):
        raise SettingsError(f"{path} does not hold a JSON object; nothing was changed")
    return value


def dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


@dataclass
class Change:
    """One file's planned change: its new text (``None``: delete the file)."""

    path: Path
    before: str | None
    after: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after


def plan_setup(path: Path, change: dict[str, Any]) -> Change:
    before = path.read_text(encoding="utf-8") if path.exists() else None
    return Change(path, before, dumps(change))


def plan_remove(path: Path, stripped: dict[str, Any]) -> Change:
    """Take kioku out: the bytes found before setup when nothing else changed since, else
    the file without kioku's entries (no file, when there was none and nothing is left)."""
    before = path.read_text(encoding="utf-8") if path.exists() else None
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if backup.exists():
        original = backup.read_text(encoding="utf-8")
        if original == "" and not stripped:
            return Change(path, before, None)  # there was no file: none again
        if original and read_json(backup) == stripped:
            return Change(path, before, original)
    return Change(path, before, before if before is None else dumps(stripped))


def apply(change: Change, *, keep_backup: bool) -> None:
    """Write (or delete) the file, atomically, keeping its mode; the first setup keeps the
    bytes it found beside it (empty: there was no file)."""
    backup = change.path.with_name(change.path.name + BACKUP_SUFFIX)
    if keep_backup and not backup.exists():
        backup.parent.mkdir(parents=True, exist_ok=True)
        backup.write_text(change.before or "", encoding="utf-8")
        os.chmod(backup, 0o600)
    if not keep_backup:
        backup.unlink(missing_ok=True)
    if not change.changed:
        return
    if change.after is None:
        change.path.unlink(missing_ok=True)
        return
    change.path.parent.mkdir(parents=True, exist_ok=True)
    mode = change.path.stat().st_mode & 0o777 if change.path.exists() else 0o600
    temporary = change.path.with_name(f".{change.path.name}.kioku-{os.getpid()}")
    temporary.write_text(change.after, encoding="utf-8")
    os.chmod(temporary, mode)
    os.replace(temporary, change.path)
