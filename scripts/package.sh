#!/usr/bin/env bash
# Builds the Debian package from the release binaries `make build` made: the app, the `ponder`
# CLI next to it in /usr/bin, the desktop entry and the icons (Tauri's bundler, configured in
# src-tauri/tauri.conf.json). The dependency list is read from the binaries' real shared-library
# needs (dpkg-shlibdeps), not written by hand, so it cannot drift from what the code links.
# Prints the package's path.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
release="$target/release"
for bin in ponder-app ponder; do
  [[ -x "$release/$bin" ]] || { echo "package: $release/$bin is missing: run \"make build\" first" >&2; exit 1; }
done

# dpkg-shlibdeps wants to run inside a Debian source tree; a scratch one will do.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/debian"
printf 'Source: ponder\n' >"$scratch/debian/control"
depends="$(cd "$scratch" && dpkg-shlibdeps -O -e"$release/ponder-app" -e"$release/ponder" 2>/dev/null)"
depends="${depends#shlibs:Depends=}"
[[ -n "$depends" ]] || { echo "package: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

# The list as JSON strings: "libc6 (>= 2.34)", "libgtk-3-0 (>= 3.21.5)", ...
depends_json="$(python3 -c 'import json, sys; print(json.dumps([d.strip() for d in sys.argv[1].split(",")]))' "$depends")"
config="$scratch/package.json"
cat >"$config" <<EOF
{"bundle": {"linux": {"deb": {
  "depends": $depends_json,
  "files": {"/usr/bin/ponder": "$release/ponder"}
}}}}
EOF

# The bundler writes into the app binary it packs (which bundle type it came in), and a changed
# binary makes cargo rebuild it: it packs a copy, in a target folder of its own.
mkdir -p "$scratch/target/release"
cp "$release/ponder-app" "$scratch/target/release/"
cd "$root"
CARGO_TARGET_DIR="$scratch/target" ui/node_modules/.bin/tauri bundle --ci --bundles deb --config "$config" >&2

# The bundler appends its own unversioned `libwebkit2gtk-4.1-0, libgtk-3-0` to the list; the
# package says each dependency once, as dpkg-shlibdeps gave it.
built="$(ls "$scratch"/target/release/bundle/deb/*.deb)"
tree="$scratch/tree"
dpkg-deb -R "$built" "$tree"
sed -i "s/^Depends: .*/Depends: $depends/" "$tree/DEBIAN/control"
rm -rf "$release/bundle/deb"
mkdir -p "$release/bundle/deb"
dpkg-deb --root-owner-group -Zxz -b "$tree" "$release/bundle/deb/$(basename "$built")" >/dev/null
ls "$release"/bundle/deb/*.deb
