#!/usr/bin/env bash
# The previous build's binary, for the rolling-upgrade test (tests/api/rolling_upgrade.rs): checks
# COMMIT out beside this checkout (a git worktree) and builds it into this checkout's own target
# folder, so that it shares the dependencies' build with the current one (a few minutes, not ten),
# then keeps the binary as target/previous/gatehouse-COMMIT. Does nothing when that file exists.
#
#   scripts/previous-build.sh            # the commit tests/api/rolling_upgrade.rs names
#   scripts/previous-build.sh 8d32687
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${1:-$(sed -n 's/^const PREVIOUS: &str = "\([0-9a-f]*\)";/\1/p' tests/api/rolling_upgrade.rs)}
commit=$(git rev-parse --short=7 "$commit^{commit}")
out=$PWD/target/previous/gatehouse-$commit
[ -x "$out" ] && { echo "have $out" >&2; exit 0; }

work=$(mktemp -d)
cleanup() {
  git worktree remove --force "$work/src" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add --detach -q "$work/src" "$commit"
echo "building $commit" >&2
# In this checkout's target folder, sharing the dependencies' build with the current one (minutes
# less than a folder of its own); its binary renamed, so that target/debug/gatehouse stays the
# current build's.
sed -i '/^\[\[bin\]\]$/,/^path/ s/^name = "gatehouse"$/name = "gatehouse-previous"/' "$work/src/Cargo.toml"
grep -q '^name = "gatehouse-previous"$' "$work/src/Cargo.toml"
CARGO_TARGET_DIR=$PWD/target cargo build -q --locked --bin gatehouse-previous --manifest-path "$work/src/Cargo.toml"
mkdir -p "$(dirname "$out")"
cp "$PWD/target/debug/gatehouse-previous" "$out.tmp"
mv "$out.tmp" "$out"
echo "made $out" >&2
