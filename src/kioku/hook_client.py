"""``kioku-hook``: the command form of kioku's Claude Code hooks (docs/integrations.md).

Claude Code runs it on SessionStart and UserPromptSubmit with the hook's JSON on stdin; it
forwards that JSON to ``POST /api/v1/hooks/claude-code`` of the server at ``KIOKU_URL`` and
prints the answer (``hookSpecificOutput.additionalContext``) for Claude Code to add to the turn.

It can never hurt the agent: it imports nothing heavy (the standard library's ``http.client``,
no SDK, no models), gives the server ``--timeout`` seconds (default 2), and on any failure (no
server, a timeout, a refused key, an error answer) prints nothing on stdout, one line on
stderr, and exits 0, so the prompt goes on without kioku's context. The API key comes from
``KIOKU_API_KEY`` or a file only its owner can read (``--key-file``, default
``~/.config/kioku/api-key``, mode 0600); never from the command line, where other users can
read it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import urlencode, urlsplit

from kioku.settings import client as client_settings  # standard library only

DEFAULT_URL = client_settings.DEFAULT_URL
ENDPOINT = "/api/v1/hooks/claude-code"
MAX_INPUT_BYTES = 4 * 1024 * 1024


USAGE = """usage: kioku-hook [--context NAME]... [--trust trusted|all] [--capture]
                  [--min-confidence high|moderate|low|none] [--recall-k N]
                  [--pinned-chars N] [--recall-chars N] [--url URL] [--key-file PATH]
                  [--timeout SECONDS]

Reads a Claude Code hook's JSON on stdin, asks the kioku server at --url (or KIOKU_URL,
default http://127.0.0.1:8765) what to add to the turn, and prints Claude Code's hook
output. The API key comes from KIOKU_API_KEY or --key-file (default
~/.config/kioku/api-key, mode 0600). Always exits 0: on any failure nothing is added and
one line says why on stderr. Installed by `kioku setup claude-code`."""


class HookFailed(Exception):
    """Why nothing was added (said on stderr in one line)."""


def default_key_file() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "kioku", "api-key")


def read_key(path: str) -> str | None:
    """The key in ``path`` when only its owner can read it; None when there is no file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if mode & 0o077:
        raise HookFailed(f"{path} is readable by others (mode {mode & 0o777:o}): chmod 600 it")
    with open(path, encoding="utf-8") as file:
        return file.read().strip() or None


def parse_args(argv: list[str]) -> dict[str, Any]:
    """``--context NAME`` (repeatable), ``--trust``, ``--min-confidence``, ``--capture``,
    ``--url``, ``--key-file``, ``--timeout``, by hand: importing argparse alone takes ~25 ms,
    a quarter of a hook's budget."""
    options: dict[str, Any] = {"context": [], "params": {}}
    values = {"--trust": "trust", "--min-confidence": "min_confidence", "--recall-k": "recall_k"}
    values |= {"--pinned-chars": "pinned_chars", "--recall-chars": "recall_chars"}
    args = iter(argv)
    for arg in args:
        name, eq, inline = arg.partition("=")
        if name in ("-h", "--help"):
            raise SystemExit(print(USAGE) or 0)
        if name == "--capture":
            options["params"]["capture"] = "true"
            continue
        if name not in (*values, "--context", "--url", "--key-file", "--timeout"):
            raise HookFailed(f"unknown option {arg!r}")
        value = inline if eq else next(args, None)
        if value is None:
            raise HookFailed(f"{name} needs a value")
        if name == "--context":
            options["context"].append(value)
        elif name in values:
            options["params"][values[name]] = value
        else:
            options[name[2:].replace("-", "_")] = value
    return options


def forward(event: bytes, options: dict[str, Any]) -> bytes:
    """POST the hook's event to the server; the answer's body (a 2xx) or ``HookFailed``."""
    import http.client

    base = urlsplit(options.get("url") or client_settings.server_url() or DEFAULT_URL)
    if base.scheme not in ("http", "https") or not base.hostname:
        raise HookFailed(f"KIOKU_URL {base.geturl()!r} is not an http(s) URL")
    key = client_settings.api_key() or read_key(options.get("key_file") or default_key_file())
    query = urlencode([*(("context", c) for c in options["context"]), *options["params"].items()])
    target = base.path.rstrip("/") + ENDPOINT + (f"?{query}" if query else "")
    headers = {"Content-Type": "application/json", "User-Agent": "kioku-hook"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    timeout = float(options.get("timeout") or 2.0)
    kind = http.client.HTTPSConnection if base.scheme == "https" else http.client.HTTPConnection
    connection = kind(base.hostname, base.port, timeout=timeout)
    try:
        connection.request("POST", target, body=event, headers=headers)
        answer = connection.getresponse()
        body = answer.read()
    except (OSError, http.client.HTTPException) as exc:
        raise HookFailed(f"no answer from {base.geturl()} ({exc or type(exc).__name__})") from exc
    finally:
        connection.close()
    if not 200 <= answer.status < 300:
        raise HookFailed(f"the server answered {answer.status}: {_message(body)}")
    return body


def _message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["message"])[:200]
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    """Run one hook: stdin → the server → stdout; always exit 0 (fail open)."""
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
        event = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(event) > MAX_INPUT_BYTES:
            raise HookFailed("the hook's input is over 4 MiB")
        answer = forward(event, options)
    except HookFailed as exc:
        print(f"kioku-hook: {exc}; no context added", file=sys.stderr)
        return 0
    except Exception as exc:  # never block a prompt, whatever went wrong
        print(f"kioku-hook: {type(exc).__name__}: {exc}; no context added", file=sys.stderr)
        return 0
    sys.stdout.write(answer.decode("utf-8", "replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
