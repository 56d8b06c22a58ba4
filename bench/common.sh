# Sourced by the scripts in bench/: the tools they need, the release build, readiness, and wrk's
# summary as table cells.

# need COMMAND DEBIAN-PACKAGE: installs the package when the command is missing.
need() {
  command -v "$1" >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
  }
}

# Builds the release binary; sets BIN. BENCH_BIN names a binary to use instead (an A/B pair built
# beforehand); the build honours CARGO_TARGET_DIR.
build_release() {
  if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN
    return
  fi
  cargo build --release -q
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/gatehouse
}

# bench_account [EMAIL]: the database, made if missing (the CLI makes none: only serve and migrate
# do), and an account of EMAIL (default bench@example.com) with $PASSWORD.
bench_account() {
  "$BIN" migrate >/dev/null
  echo "$PASSWORD" | "$BIN" user add --email "${1:-bench@example.com}" --name Bench --password-stdin >/dev/null
}

# serve_bench BASE-URL: `gatehouse serve` in the background (its pid in SERVER), until it answers.
serve_bench() {
  "$BIN" serve &
  SERVER=$!
  wait_ready "$1"
}

# wait_ready BASE-URL: until /healthz answers (5 s at most).
wait_ready() {
  for _ in $(seq 1 100); do curl -sf "$1/healthz" >/dev/null && return 0; sleep 0.05; done
  echo "the server did not come up at $1" >&2
  return 1
}

# wrk_fields WRK-ARGS…: runs wrk --latency and prints "requests/s|p50|p99|errors", errors being
# non-2xx answers plus socket errors.
wrk_fields() {
  local out
  out=$(wrk --latency "$@")
  awk '
    /Requests\/sec/ {rps=$2}
    $1=="50%" {p50=$2}
    $1=="99%" {p99=$2}
    /Non-2xx/ {err+=$5}
    /Socket errors/ {gsub(",", ""); err+=$4+$6+$8+$10}
    END {printf "%s|%s|%s|%d\n", rps, p50, p99, err}' <<<"$out"
}

# wrk_row WRK-ARGS…: the same as Markdown cells, "requests/s | p50 | p99 | errors".
wrk_row() {
  wrk_fields "$@" | sed 's/|/ | /g'
}

# serve_settings ADDR WORK: the service's environment for a load run on ADDR, on the PostgreSQL
# database BENCH_DATABASE_URL names (with BENCH_MASTER_KEY, or a fresh key) or else on SQLite in
# WORK; sets BACKEND. The load comes from one address but stands for many clients: no per-client
# connection cap, no throttling.
serve_settings() {
  export GATEHOUSE_LISTEN=$1 GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off
  export GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT=1024
  # With PostgreSQL the mail folder would be the working folder's `mail/`: the checkout's.
  export GATEHOUSE_MAIL_DIR=$2/mail
  if [ -n "${BENCH_DATABASE_URL:-}" ]; then
    export GATEHOUSE_DATABASE_URL=$BENCH_DATABASE_URL
    export GATEHOUSE_MASTER_KEY=${BENCH_MASTER_KEY:-$(head -c 32 /dev/urandom | base64)}
    BACKEND=postgres
  else
    export GATEHOUSE_DATABASE_URL=sqlite://$2/gatehouse.db
    BACKEND=sqlite
  fi
}
