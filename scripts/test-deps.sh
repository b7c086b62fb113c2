#!/usr/bin/env bash
# Installs what the tests need beyond Go, when it is missing: the npm packages of
# the Node programs the tests drive (the MCP TypeScript SDK client and
# examples/node, from their committed package-lock.json files) and headless
# Chromium for the mission viewer's browser test (Debian's package; needs root).
# Safe to run again: it installs nothing that is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
  apt-get update && apt-get install -y nodejs npm
fi
for dir in cmd/dispatcher/testdata/mcpclient examples/node; do
  if [ -f "$dir/package-lock.json" ] && [ ! -d "$dir/node_modules" ]; then
    npm ci --prefix "$dir" --no-audit --no-fund
  fi
done

if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
  apt-get update && apt-get install -y --no-install-recommends chromium-headless-shell
fi
