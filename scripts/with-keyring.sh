#!/usr/bin/env bash
# Runs a command with a Secret Service of its own: GNOME Keyring, unlocked, in a throwaway
# folder, on the D-Bus session bus that `dbus-run-session` gives it. The app keeps the remote
# engine's API key in the OS keyring, and its tests check that it really lands there.
#   dbus-run-session -- scripts/with-keyring.sh COMMAND...
set -euo pipefail
XDG_DATA_HOME=$(mktemp -d)
export XDG_DATA_HOME
trap 'rm -rf "$XDG_DATA_HOME"' EXIT
mkdir -p "$XDG_DATA_HOME/keyrings"
eval "$(printf 'ponder-test' | gnome-keyring-daemon --unlock --components=secrets)"
export GNOME_KEYRING_CONTROL
"$@"
