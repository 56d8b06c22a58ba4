#!/usr/bin/env bash
# Enumeration resistance, measured (bench/enumeration.py): a release build on SQLite, throttling
# off so thousands of failures from one address are all checked. Then the mail flows
# (bench/mail.py): forgotten password for a known vs an unknown address, registration with a taken
# vs a free address, and the outbox's delivery rate, with a second server whose mail goes to a
# real SMTP server (Debian's python3-aiosmtpd).
#
#   bench/enumeration.sh            # SAMPLES=400 per case by default, DELIVERY=300 mails
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
ADDR=127.0.0.1:18082
build_release
WORK=$(mktemp -d)
SERVER=
MAIL_SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; [ -n "$MAIL_SERVER" ] && kill "$MAIL_SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off
export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
PASSWORD='correct horse battery staple' bench_account timing@example.com
serve_bench http://$ADDR
BASE=http://$ADDR BENCH_EMAIL=timing@example.com python3 bench/enumeration.py

# The mail flows, on a server of their own.
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-aiosmtpd >/dev/null
}
MAIL_ADDR=127.0.0.1:18083
SMTP_PORT=18025
mkdir -p "$WORK/mail"
GATEHOUSE_LISTEN=$MAIL_ADDR GATEHOUSE_DATABASE_URL=sqlite://$WORK/mail/gatehouse.db \
  GATEHOUSE_REGISTRATION=open GATEHOUSE_SMTP_URL=smtp://127.0.0.1:$SMTP_PORT \
  GATEHOUSE_MAIL_RETRY_MAX=1s "$BIN" serve & MAIL_SERVER=$!
wait_ready http://$MAIL_ADDR
BASE=http://$MAIL_ADDR SMTP_PORT=$SMTP_PORT MAILDIR=$WORK/mail/maildir /usr/bin/python3 bench/mail.py
