#!/usr/bin/env bash
# The databases an earlier build leaves behind, for tests/api/upgrades.rs (docs/guide/deployment.md):
# checks COMMIT out beside this checkout (a git worktree), builds it, and with that build makes a
# SQLite database and a PostgreSQL dump holding one of each thing a deployment keeps (accounts,
# a second factor, a session, an API key, a client, an organisation, a contact) and what a test
# needs to use them (the secrets, in fixture.json). Into tests/fixtures/upgrades/COMMIT/.
#
#   scripts/upgrade-fixture.sh 8d32687
#
# PostgreSQL: FIXTURE_POSTGRES_URL (default postgres://postgres:postgres@127.0.0.1:5432/postgres);
# the build: FIXTURE_TARGET_DIR (default target/fixtures, kept between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=7 "$1^{commit}")
out=$PWD/tests/fixtures/upgrades/$commit
target=${FIXTURE_TARGET_DIR:-$PWD/target/fixtures}
pg=${FIXTURE_POSTGRES_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}

work=$(mktemp -d)
cleanup() {
  git worktree remove --force "$work/src" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add --detach -q "$work/src" "$commit"
echo "building $commit" >&2
CARGO_TARGET_DIR=$target cargo build -q --manifest-path "$work/src/Cargo.toml"

rm -rf "$out"
mkdir -p "$out"
python3 scripts/upgrade_fixture.py "$target/debug/gatehouse" "$commit" "$work" "$out" "$pg"
echo "made $out" >&2
