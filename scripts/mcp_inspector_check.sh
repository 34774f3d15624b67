#!/usr/bin/env bash
# An independent MCP client against kioku: the MCP Inspector CLI (npm) lists the tools and
# calls remember and recall over streamable HTTP.
#
#   scripts/mcp_inspector_check.sh [MCP_URL]
#
# Without MCP_URL it starts `kioku serve --dev` on a free loopback port with a throwaway
# database and stops it afterwards. The Inspector is installed once into .cache/ (0.15.0: the
# newest release that runs on Node 20; later ones need Node 22).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VERSION="0.15.0"
PREFIX="$ROOT/.cache/mcp-inspector-$VERSION"
KIOKU="${KIOKU:-$ROOT/.venv/bin/kioku}"

# The registry can fail a download now and then: three tries, npm's errors shown, and the
# install lands in place only when complete (a half-installed prefix is never reused).
if [ ! -x "$PREFIX/node_modules/.bin/mcp-inspector" ]; then
  mkdir -p "$ROOT/.cache"
  for attempt in 1 2 3; do
    STAGING="$(mktemp -d "$ROOT/.cache/mcp-inspector-staging.XXXXXX")"
    if npm install --prefix "$STAGING" --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/inspector@$VERSION" >&2; then
      rm -rf "$PREFIX" && mv "$STAGING" "$PREFIX"
      break
    fi
    rm -rf "$STAGING"
    echo "npm install of the MCP Inspector $VERSION failed (try $attempt of 3)" >&2
    if [ "$attempt" -eq 3 ]; then exit 1; fi
    sleep $((attempt * 5))
  done
fi
INSPECTOR="$PREFIX/node_modules/.bin/mcp-inspector"

URL="${1:-}"
SERVER_PID=""
WORKDIR="$(mktemp -d)"
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORKDIR"
}
trap cleanup EXIT

if [ -z "$URL" ]; then
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  KIOKU_DATABASE_URL="sqlite:///$WORKDIR/kioku.db" HF_HUB_OFFLINE=1 \
    "$KIOKU" serve --dev --port "$PORT" >"$WORKDIR/serve.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
    sleep 0.5
  done
  URL="http://127.0.0.1:$PORT/mcp"
fi

inspect() {
  "$INSPECTOR" --cli "$URL" --transport http "$@" || {
    echo "the MCP Inspector failed on: $*" >&2
    return 1
  }
}

MARK="inspector-check-$RANDOM$RANDOM"
inspect --method tools/list >"$WORKDIR/tools.json"
inspect --method tools/call --tool-name remember \
  --tool-arg "summary=The $MARK note lives in the staging wiki" >"$WORKDIR/remember.json"
inspect --method tools/call --tool-name recall \
  --tool-arg "query=$MARK staging wiki" >"$WORKDIR/recall.json"

python3 - "$WORKDIR" "$MARK" <<'PY'
import json, sys
from pathlib import Path

workdir, mark = Path(sys.argv[1]), sys.argv[2]
tools = {t["name"] for t in json.loads((workdir / "tools.json").read_text())["tools"]}
needed = {"remember", "recall", "load_pinned", "set_state", "get_state", "feedback"}
assert needed <= tools, f"missing tools: {needed - tools}"

def payload(name):
    result = json.loads((workdir / name).read_text())
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])

stored = payload("remember.json")
found = payload("recall.json")
ids = [hit["memory_id"] for hit in found["results"]]
assert stored["memory_id"] in ids, (stored, found)
assert stored["source_type"] == "manual"
print(f"MCP Inspector {len(tools)} tools; remember -> {stored['memory_id']}; recall found it")
PY
