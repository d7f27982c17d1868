#!/usr/bin/env bash
# Installs whatever Ponder needs and is missing; quiet and quick when everything is there.
#   scripts/setup.sh          everything for building, running and testing
#   scripts/setup.sh --run    only what `make run` needs (no test models, no tauri-driver)
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-all}"

bash scripts/setup-apt.sh

# UI dependencies, exactly as locked. Re-run only when the lockfile changed.
if [ ! -f ui/node_modules/.package-lock.json ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  echo "setup: installing UI dependencies (npm ci)"
  (cd ui && npm ci --no-audit --no-fund --loglevel=error)
  touch ui/node_modules/.package-lock.json
fi

[ "$MODE" = "--run" ] && exit 0

# tauri-driver bridges WebDriver to the app's WebKitWebDriver for the end-to-end tests.
if ! "${CARGO_HOME:-$HOME/.cargo}/bin/tauri-driver" --help >/dev/null 2>&1; then
  echo "setup: installing tauri-driver 2.1.0"
  cargo install tauri-driver --version 2.1.0 --locked --quiet
fi

# The Python package the server tests drive Ponder with.
if ! python3 -c "import openai" >/dev/null 2>&1; then
  echo "setup: installing the openai Python package"
  python3 -m pip install -q --disable-pip-version-check "openai==1.109.1"
fi

bash scripts/fetch-test-models.sh
