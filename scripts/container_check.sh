#!/usr/bin/env bash
# Build the image from this checkout and run it as people are told to (Dockerfile, README):
# once with a named volume as its own user, once as another uid with a folder of the host.
# Each must answer /health on the published loopback port and pass the image's own
# HEALTHCHECK command, run inside it. .ci/run calls this when `docker info` succeeds; where no
# engine runs, tests/packaging/test_image_fallback.py does the same without one
# (docs/operations.md, "What is checked where").
set -euo pipefail
cd "$(dirname "$0")/.."
tag="kioku:check-$$"
work="$(mktemp -d)"
containers=()
cleanup() {
  for id in "${containers[@]}"; do docker rm -f -v "$id" >/dev/null 2>&1 || true; done
  docker volume rm "kioku-check-$$" >/dev/null 2>&1 || true
  docker image rm "$tag" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

docker build --tag "$tag" .
# The image's HEALTHCHECK command, as an argument list (exec form: ["CMD", ...]).
mapfile -d '' -t probe < <(docker image inspect --format '{{json .Config.Healthcheck.Test}}' \
  "$tag" | python3 -c 'import json, sys; sys.stdout.write("\0".join(json.load(sys.stdin)[1:]))')

check() {  # NAME, then docker run's options: run detached, wait until healthy, stop
  local name="$1" id port
  shift
  id="$(docker run --detach --publish 127.0.0.1::8765 "$@" "$tag")"
  containers+=("$id")
  port="$(docker port "$id" 8765/tcp | head -n 1)"
  port="${port##*:}"
  for _ in $(seq 1 120); do
    if curl --fail --silent --max-time 5 "http://127.0.0.1:$port/health" 2>/dev/null \
      && docker exec "$id" "${probe[@]}"; then
      echo
      echo "container check ($name): healthy on 127.0.0.1:$port"
      docker stop --time 20 "$id" >/dev/null
      return 0
    fi
    if [ "$(docker inspect --format '{{.State.Running}}' "$id")" != "true" ]; then break; fi
    sleep 1
  done
  docker logs "$id" >&2 || true
  echo "container check ($name): not healthy" >&2
  return 1
}

check "named volume, uid 10001" --volume "kioku-check-$$:/data"
# docker run --user with a folder of the host (the recipe in the Dockerfile's comment).
mkdir -m 700 "$work/data"
user="4242:4242"
if [ "$(id -u)" -eq 0 ]; then chown 4242:4242 "$work/data"; else user="$(id -u):$(id -g)"; fi
check "--user $user, host folder" --user "$user" --volume "$work/data:/data"
test -s "$work/data/kioku.db"  # the database is in the host's folder
