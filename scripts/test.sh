#!/usr/bin/env bash
# The whole test suite: unit + e2e as the current user, and when run as root (as CI does) the
# whole suite again as an unprivileged user, since real users are not root (and a few checks,
# such as an unreadable settings file, only mean something for them).
# Ends with one summary line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

status=0
# The clients the tests run (installed as root when missing).
bash scripts/test-deps.sh || status=1
# Source and tests are type-checked together (vitest itself does not check types).
npm run --silent typecheck || status=1
npx vitest run --reporter=default --reporter=json --outputFile.json="$results/main.json" || status=1

if [ "$(id -u)" = 0 ] && [ "${SRT_TEST_SKIP_UNPRIVILEGED:-}" != 1 ]; then
  # A user of this run only (no test account stays on a developer's machine, and concurrent runs
  # do not share one): made here, removed with its home on exit.
  user=srt-test-$$
  useradd --create-home --shell /bin/bash "$user"
  trap 'rm -rf "$results"; userdel --remove "$user" 2>/dev/null' EXIT
  # The checkout may sit where the user cannot enter (e.g. /root): give it a readable copy.
  copy=$(mktemp -d /tmp/srt-unpriv.XXXXXX)
  tar -C "$repo" --exclude=.git -cf - . | tar -C "$copy" -xf -
  chown -R "$user": "$copy" "$results"
  echo "== unit + e2e as unprivileged user $user"
  runuser -u "$user" -- env -i PATH="$PATH" HOME="$(getent passwd "$user" | cut -d: -f6)" LANG=C.UTF-8 \
    bash -c "cd '$copy' && npx vitest run --reporter=default --reporter=json --outputFile.json='$results/unpriv.json'" || status=1
  rm -rf "$copy"
fi

node -e '
  const fs = require("fs"); let passed = 0, failed = 0;
  for (const f of fs.readdirSync(process.argv[1])) {
    const r = JSON.parse(fs.readFileSync(process.argv[1] + "/" + f, "utf8"));
    passed += r.numPassedTests;
    // A file that fails to load has no failed tests but must still count as a failure.
    failed += r.numFailedTests || r.numFailedTestSuites;
  }
  console.log(`${passed} passed, ${failed} failed`);
' "$results" || status=1
exit $status
