// What the library's tests share: the real Gatehouse they talk to, fresh accounts on it, an
// RFC 6238 authenticator, and a Storage. Kept out of test/ because Node's runner would run any
// module there as a test file.
//
// The service under test (the contract with whoever runs the tests), one of:
// - GATEHOUSE_BIN: the path of a built `gatehouse` binary (preferred). Each test file starts its
//   own server from it, on port 0 with a fresh SQLite database in a temporary folder, with the
//   settings below, and uses the same binary's CLI on that database (invitations).
// - GATEHOUSE_URL: base URL of a running Gatehouse, started with
//     GATEHOUSE_REGISTRATION=open         accounts are made through POST /auth/register
//     GATEHOUSE_ACCESS_TOKEN_TTL=2s       short, so that expiry can be reached (≤ 10 s; the
//                                         expiry tests check `expiresIn` and fail otherwise)
//     GATEHOUSE_RATE_LIMIT=off            registration and login are throttled per address
//   and passkeys allowed for GATEHOUSE_URL's origin, e.g. GATEHOUSE_URL and GATEHOUSE_PUBLIC_URL
//   both http://localhost:PORT; and GATEHOUSE_MAIL_DIR, its folder of .eml files (no SMTP), for
//   the tests that follow mailed links. The test that needs the CLI (invitations) is then
//   skipped, saying why, and so are those that need mail without GATEHOUSE_MAIL_DIR.

import { spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

let started = null;

/**
 * The origin the passkey tests' authenticator puts in its client data: GATEHOUSE_URL's (the
 * service must accept it: GATEHOUSE_PUBLIC_URL=GATEHOUSE_URL=http://localhost:PORT does), or for a
 * server started here, a fixed one its settings allow.
 */
export const PASSKEY_ORIGIN = process.env.GATEHOUSE_URL
  ? new URL(process.env.GATEHOUSE_URL).origin
  : "http://localhost";

/** The base URL of the Gatehouse under test (starting one from GATEHOUSE_BIN if needed). */
export function gatehouseUrl() {
  if (process.env.GATEHOUSE_URL) return Promise.resolve(process.env.GATEHOUSE_URL.replace(/\/+$/, ""));
  if (!process.env.GATEHOUSE_BIN) {
    return Promise.reject(
      new Error(
        "set GATEHOUSE_URL to a running Gatehouse (GATEHOUSE_REGISTRATION=open, " +
          "GATEHOUSE_ACCESS_TOKEN_TTL=2s), or GATEHOUSE_BIN to a built gatehouse binary",
      ),
    );
  }
  started ??= startServer(process.env.GATEHOUSE_BIN);
  return started.then((s) => s.url);
}

/**
 * The server this process started (`{url, dir, env}`), or null when the tests run against
 * GATEHOUSE_URL: the tests that need its CLI or mail folder skip with this reason.
 */
export async function ownServer() {
  if (process.env.GATEHOUSE_URL || !process.env.GATEHOUSE_BIN) return null;
  await gatehouseUrl();
  return started;
}
export const NO_OWN_SERVER = "needs GATEHOUSE_BIN (the CLI and mail folder of the server under test)";

/** Runs `gatehouse <args>` on the started server's database; resolves to its stdout. */
export async function cli(args) {
  const s = await ownServer();
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.GATEHOUSE_BIN, args, { cwd: s.dir, env: s.env });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`gatehouse ${args.join(" ")}: ${code}\n${err}`)),
    );
  });
}

/**
 * The folder of the service's .eml outbox: the started server's, or GATEHOUSE_MAIL_DIR with
 * GATEHOUSE_URL; null when there is none (the tests that read mail then skip with NO_MAIL).
 */
export async function mailFolder() {
  if (process.env.GATEHOUSE_URL) return process.env.GATEHOUSE_MAIL_DIR || null;
  const s = await ownServer();
  return s ? join(s.dir, "mail") : null;
}
export const NO_MAIL = "needs the service's mail folder (GATEHOUSE_BIN, or GATEHOUSE_MAIL_DIR with GATEHOUSE_URL)";

/**
 * The token of a link to `page` mailed to `email` and not in `skip`, waiting for the server's
 * delivery (the mail folder is its .eml outbox without SMTP).
 */
export async function mailedToken(email, page, { skip = [] } = {}) {
  const folder = await mailFolder();
  const pattern = new RegExp(`/${page}\\?token=([A-Za-z0-9_-]+)`);
  for (let i = 0; i < 150; i++) {
    let names = [];
    try {
      names = readdirSync(folder).filter((n) => n.endsWith(".eml"));
    } catch {
      // Not made until the first mail.
    }
    for (const name of names) {
      // Quoted-printable: soft line breaks out, "=3D" back to "=".
      const text = readFileSync(join(folder, name), "utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "=");
      if (!new RegExp(`^To: .*${email.replace(/[.+]/g, "\\$&")}`, "mi").test(text)) continue;
      const m = pattern.exec(text);
      if (m && !skip.includes(m[1])) return m[1];
    }
    await sleep(100);
  }
  throw new Error(`no mail to ${email} with a /${page} link in ${folder}`);
}

/** Stops the server this process started, if any (call from `after`). */
export async function stopServer() {
  if (!started) return;
  const s = await started.catch(() => null);
  started = null;
  if (!s) return;
  s.child.kill("SIGTERM");
  await new Promise((resolve) => s.child.once("exit", resolve));
  rmSync(s.dir, { recursive: true, force: true });
}

function startServer(bin) {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-js-"));
  // Only these settings: a GATEHOUSE_* variable of the calling shell must not change the service.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("GATEHOUSE_")),
  );
  const env = {
      ...inherited,
      GATEHOUSE_DATABASE_URL: `sqlite://${join(dir, "gatehouse.db")}`,
      GATEHOUSE_LISTEN: "127.0.0.1:0",
      GATEHOUSE_REGISTRATION: "open",
      GATEHOUSE_ACCESS_TOKEN_TTL: "2s",
      GATEHOUSE_RATE_LIMIT: "off",
      // The software authenticator signs for this origin (no browser ever loads it).
      GATEHOUSE_WEBAUTHN_RP_ID: "localhost",
      GATEHOUSE_WEBAUTHN_ORIGINS: PASSKEY_ORIGIN,
      GATEHOUSE_LOG_FORMAT: "text",
      GATEHOUSE_LOG: "info",
  };
  const child = spawn(bin, ["serve"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env });
  return new Promise((resolve, reject) => {
    let log = "";
    const onData = (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/[^\s]+)/.exec(log);
      if (m) {
        child.stderr.off("data", onData);
        child.stdout.off("data", onData);
        // Keep draining, or a full pipe would block the server's logging.
        child.stderr.resume();
        child.stdout.resume();
        resolve({ url: m[1], child, dir, env });
      }
    };
    child.stderr.setEncoding("utf8").on("data", onData);
    child.stdout.setEncoding("utf8").on("data", onData);
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`gatehouse exited (${code}) before listening:\n${log}`)));
  });
}

/** A Storage (the Web Storage interface) in memory: what a tab's localStorage is to the library. */
export class MemoryStorage {
  items = new Map();
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
  /** The stored session record, parsed (null when none). */
  record(key = "gatehouse") {
    const raw = this.getItem(key);
    return raw === null ? null : JSON.parse(raw);
  }
  /** Changes fields of the stored session record. */
  patch(fields, key = "gatehouse") {
    this.setItem(key, JSON.stringify({ ...this.record(key), ...fields }));
  }
}

/** The real fetch, with every call's method and path written down (to count refreshes). */
export function recordingFetch() {
  const calls = [];
  const fetchFn = (input, init = {}) => {
    const request = input instanceof Request ? input : null;
    calls.push(`${init.method ?? request?.method ?? "GET"} ${new URL(request?.url ?? input).pathname}`);
    return fetch(input, init);
  };
  fetchFn.calls = calls;
  fetchFn.count = (call) => calls.filter((c) => c === call).length;
  return fetchFn;
}

export const PASSWORD = "lantern orbit cobalt meadow";

/** A fresh account made through POST /auth/register: `{email, password, fullName, id}`. */
export async function newAccount(baseUrl, fullName = "Ada Test") {
  const email = `js-${randomUUID()}@example.com`;
  const res = await fetch(`${baseUrl}/api/v1/auth/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email, password: PASSWORD, fullName }),
  });
  const body = await res.json();
  if (res.status !== 201) {
    throw new Error(`register answered ${res.status}: ${JSON.stringify(body)} (GATEHOUSE_REGISTRATION=open?)`);
  }
  return { email, password: PASSWORD, fullName, id: body.data.user.id };
}

// The service accepts an access token up to this long past its `exp` (docs/api.md §2).
const SERVER_LEEWAY_MS = 5_000;

/**
 * Waits until the service itself calls the access token stored in `storage` expired (its
 * lifetime, then the service's leeway), so that a client whose clock says otherwise can be tried.
 */
export async function untilExpiredOnServer(baseUrl, storage, key = "gatehouse") {
  const { accessToken, expiresAt, expiresIn } = storage.record(key);
  if (expiresIn > 10) {
    throw new Error(`the access tokens live ${expiresIn}s: start the service with GATEHOUSE_ACCESS_TOKEN_TTL=2s`);
  }
  await sleep(Math.max(0, expiresAt + SERVER_LEEWAY_MS + 1_200 - Date.now()));
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${baseUrl}/api/v1/auth/me`, { headers: { Authorization: `Bearer ${accessToken}` } });
    const body = await res.json();
    if (res.status === 401 && body.error.code === "TOKEN_EXPIRED") return;
    await sleep(100);
  }
  throw new Error("the service still accepts the access token");
}

/** A port nothing listens on: bound, then released. */
export async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- RFC 6238 (TOTP, SHA-1, 6 digits, 30 s), what the user's authenticator app computes ----

function base32Decode(text) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0;
  let value = 0;
  const out = [];
  for (const ch of text.replace(/=+$/, "").toUpperCase()) {
    const i = alphabet.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${ch}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The RFC 4226 code of `key` (bytes) at counter `step`, `digits` long. */
export function hotp(key, step, digits = 6, algorithm = "sha1") {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac(algorithm, key).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, "0");
}

export const currentStep = (now = Date.now()) => Math.floor(now / 1000 / 30);

/**
 * An authenticator for a base32 secret. `next()` gives a code the service has not seen yet: the
 * service refuses a time step used once, and accepts one step ahead, so after the current step
 * has been used the next one's code is given.
 */
export function authenticator(secret) {
  const key = base32Decode(secret);
  let lastUsed = -1;
  return {
    at: (step) => hotp(key, step),
    next() {
      const step = Math.max(currentStep(), lastUsed + 1);
      lastUsed = step;
      return hotp(key, step);
    },
    /** A 6-digit code that no step within the allowed skew accepts. */
    wrong() {
      const now = currentStep();
      const valid = new Set([now - 1, now, now + 1, now + 2].map((s) => hotp(key, s)));
      let n = Number(hotp(key, now));
      let code;
      do {
        n = (n + 1) % 1_000_000;
        code = String(n).padStart(6, "0");
      } while (valid.has(code));
      return code;
    },
  };
}
