#!/usr/bin/env bash
# Installs the Debian packages Ponder needs to build, run and test. Idempotent and quiet when done.
set -euo pipefail
PKGS=(build-essential dpkg-dev pkg-config file libwebkit2gtk-4.1-dev xvfb xauth imagemagick
      webkit2gtk-driver chromium psmisc curl unzip dbus-daemon gnome-keyring libsecret-tools xdotool
      poppler-utils qemu-user)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing Debian packages: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
