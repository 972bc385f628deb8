#!/usr/bin/env bash
# Idempotent: make Debian's Chromium available at /usr/bin/chromium for the browser tests
# (tests/viz/test_browser.py drives it with Playwright; `playwright install` is not used because
# it downloads its own browser build). Never fails the set-up: without root or apt-get it prints a
# note and the browser test skips itself.
set -uo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    printf '[setup] installing Debian chromium for the browser tests\n' >&2
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
        exit 0
    fi
    printf '[setup] note: apt-get install chromium failed; browser tests will be skipped\n' >&2
    exit 0
fi
printf '[setup] note: /usr/bin/chromium missing and cannot be installed here (need root + apt-get); browser tests will be skipped\n' >&2
exit 0
