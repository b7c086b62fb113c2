#!/usr/bin/env bash
# Installs what the tests need beyond Go, when it is missing: the npm packages of
# the Node programs the tests drive (the MCP TypeScript SDK client and
# examples/node, from their committed package-lock.json files) and headless
# Chromium for the mission viewer's browser test (Debian's package; needs root).
# Safe to run again: it installs nothing that is already there. When another
# process holds the apt or dpkg lock (unattended upgrades, another install), it
# says so and waits for it, up to 10 minutes, instead of failing.
set -euo pipefail
cd "$(dirname "$0")/.."

# apt_get runs apt-get, waiting while another process holds its locks.
apt_get() {
  local out
  for _ in $(seq 120); do
    if out=$(apt-get -o DPkg::Lock::Timeout=600 "$@" 2>&1); then
      printf '%s\n' "$out"
      return 0
    fi
    if ! grep -qE 'Could not get lock|Unable to acquire|is held by process' <<<"$out"; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    echo "test-deps.sh: another process holds the apt/dpkg lock; waiting for it" >&2
    sleep 5
  done
  echo "test-deps.sh: the apt/dpkg lock was held for 10 minutes; giving up" >&2
  return 1
}

if ! command -v npm >/dev/null 2>&1; then
  apt_get update && apt_get install -y nodejs npm
fi
for dir in cmd/dispatcher/testdata/mcpclient examples/node; do
  if [ -f "$dir/package-lock.json" ] && [ ! -d "$dir/node_modules" ]; then
    npm ci --prefix "$dir" --no-audit --no-fund
  fi
done

if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
  apt_get update && apt_get install -y --no-install-recommends chromium-headless-shell
fi
