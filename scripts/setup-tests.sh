#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (run as root or with sudo):
# the package with its test extras, Debian's PostgreSQL (a real server for the SQL backend's tests,
# started by the tests themselves), Debian's Chromium (browser tests drive it headless; no browser is
# downloaded), and the MCP Inspector CLI from the npm registry (one test runs it against `trike mcp`).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium >/dev/null
fi
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq postgresql >/dev/null   # the SQL backend's tests start a throwaway server
fi
python3 -m pip install -q --disable-pip-version-check -e ".[test]"
if command -v npm >/dev/null 2>&1 && [ ! -x node_modules/.bin/mcp-inspector ]; then
  npm install --no-save --no-audit --no-fund --loglevel=error @modelcontextprotocol/inspector >/dev/null
fi
