#!/usr/bin/env bash
# The headless browser of tests/test_view.py: Debian's chromium and its chromedriver (run as root; idempotent).
# The test runs this itself when the browser is missing and it may (root, apt-get), as tests/test_slurm.py runs
# scripts/slurm-setup.sh, so `make test` and .ci/run get it with no step of their own.
set -euo pipefail

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "chromium-setup: $(chromium --version 2>/dev/null) and chromedriver already installed"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then echo "chromium-setup: run as root" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
echo "chromium-setup: $(chromium --version 2>/dev/null) and chromedriver installed"
