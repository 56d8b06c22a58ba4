// The account page's frame. Each part of the page is a section of its own (a fragment and a
// module under assets/pages/account/, listed in src/http/pages/account.rs, which says how to add
// one); this module reads the account, hands it to every section, and holds what they share: the
// API, the bar's name and sign-out, leaving for the sign-in page once the session is gone, and the
// one password prompt that sensitive actions go through (`confirmed`).
// Text is set with textContent, never parsed as HTML.
import { $, GatehouseError, clearError, gatehouse, onClick, onSubmit, showError } from "/assets/pages/ui.js";

export const api = (method, path, body) => gatehouse.request(method, path, body);

const sections = [];
let account = null;
// Set once the account is deleted: the page then stays, to say so.
let left = false;

/**
 * Adds a section: `show(me)` runs each time the account is read (GET /auth/me), `load()` once
 * after the first read (its lists).
 */
export function section(definition) {
  sections.push(definition);
}

/** The account as last read. */
export function me() {
  return account;
}

/** Reads the account again and shows it in every section. */
export async function reload() {
  account = await api("GET", "/auth/me");
  heard(account.reauthenticatedUntil);
  $("who-name").textContent = account.fullName;
  for (const s of sections) s.show?.(account);
  return account;
}

/** Reads the account and every section's lists again. */
export async function refresh() {
  await reload();
  await loadLists();
}

async function loadLists() {
  await Promise.all(sections.map((s) => s.load?.()));
}

// ---- re-authentication (docs/api.md §3) ----

// Until when (ms, by this browser's clock) the session is re-authenticated, as last heard.
let confirmedUntil = 0;
// A moment's margin: a call sent just before the window closes may arrive just after it.
const MARGIN_MS = 10_000;

function heard(until) {
  const at = until ? Date.parse(until) : NaN;
  confirmedUntil = Number.isNaN(at) ? 0 : at;
}

/** Whether the service asked for the password a sensitive call went without. */
function passwordAsked(error) {
  const fields = error?.code === "VALIDATION_ERROR" ? error.details?.fields ?? {} : {};
  return "password" in fields || "currentPassword" in fields;
}

/**
 * Runs `run`, a sensitive call sent without the password: first asks for the password once
 * (POST /auth/reauthenticate) unless this session re-authenticated in the last few minutes; and
 * should the window have closed on the way, asks and runs it once more.
 */
export async function confirmed(run) {
  if (Date.now() + MARGIN_MS >= confirmedUntil) await reauthenticate();
  try {
    return await run();
  } catch (error) {
    if (!passwordAsked(error)) throw error;
    await reauthenticate();
    return run();
  }
}

let pending = null;
// Where the keyboard was before the prompt (its button is disabled while it waits: focus falls to
// the body, so the last element focused outside the prompt is kept instead).
let lastFocus = null;
// Kept: deleting the account replaces the page's parts, the prompt with them.
const prompt = $("reauth");
document.addEventListener("focusin", (event) => {
  if (!prompt.contains(event.target)) lastFocus = event.target;
});

/** Asks for the password in the dialog; resolves once the service took it, rejects on Cancel/Escape. */
function reauthenticate() {
  clearError($("reauth-form"));
  $("reauth-form").reset();
  prompt.showModal();
  // An account a provider made has no password until its owner sets one (docs/api.md §14).
  $("reauth-no-password").hidden = account?.hasPassword !== false;
  $("reauth-password").focus();
  offerPasskey();
  offerProviders();
  return new Promise((resolve, reject) => {
    pending = { resolve, reject, returnFocus: lastFocus };
  });
}

function settle(outcome) {
  const { resolve, reject, returnFocus } = pending ?? {};
  pending = null;
  $("reauth-form").reset();
  if (prompt.open) prompt.close();
  // After the action's button is enabled again (once its promise settled).
  setTimeout(() => returnFocus?.focus?.(), 0);
  if (outcome === true) resolve?.();
  else reject?.(new GatehouseError("nothing was changed: the password was not confirmed", { code: "NOT_CONFIRMED" }));
}

action(
  $("reauth-form"),
  async () => {
    const answer = await api("POST", "/auth/reauthenticate", { password: $("reauth-password").value });
    heard(answer.reauthenticatedUntil);
    settle(true);
  },
  { password: "reauth-password" },
);
clicked($("reauth-cancel"), async () => settle(false));

// "Use a passkey", for the account that has one (whose owner may remember no password), where the
// browser can use it. Looked up at each prompt: a passkey may have been added or removed since.
async function offerPasskey() {
  const offer = $("reauth-passkey");
  offer.hidden = true;
  if (typeof globalThis.PublicKeyCredential === "undefined") return;
  try {
    offer.hidden = (await gatehouse.listPasskeys()).length === 0;
  } catch {
    // The password stays on offer.
  }
  $("reauth-how").textContent = offer.hidden ? "Enter your password" : "Enter your password or use a passkey";
}

// "Use <provider>" for each identity linked to the account: how an account a provider made (no
// password) confirms it is its owner. It leaves for the provider and comes back to this page
// (`?reauthenticated=`), where the action is asked for again.
async function offerProviders() {
  const offers = $("reauth-providers");
  offers.replaceChildren();
  let linked = [];
  try {
    linked = await gatehouse.listIdentities();
  } catch {
    return;
  }
  offers.replaceChildren(
    ...linked.map((identity) =>
      button(`Use ${identity.providerName}`, "secondary", async () => {
        location.assign(await gatehouse.reauthenticateWithProvider(identity.providerId));
      }),
    ),
  );
}

clicked($("reauth-passkey"), async () => {
  heard(await gatehouse.reauthenticateWithPasskey());
  settle(true);
});
// Escape closes a modal dialog by itself ("cancel"); whatever closes it unconfirmed cancels.
prompt.addEventListener("close", () => {
  if (pending) settle(false);
});

export function toSignIn() {
  location.replace("/sign-in");
}

/** The account is gone: the page stays to say so instead of leaving for sign-in. */
export function leaving() {
  left = true;
}

/** Whether `error` means the session is gone (signed out elsewhere, revoked, expired). */
function sessionGone(error) {
  return error?.code === "NOT_SIGNED_IN" || error?.code === "REFRESH_TOKEN_INVALID";
}

/**
 * `form`'s submission runs `run`: busy meanwhile, a failure shown beside the form with `fields`
 * (envelope field → input id) marked, a lost session sent to sign-in.
 */
export function action(form, run, fields = {}) {
  onSubmit(form, guarded(run), fields);
}

/** `button`'s click runs `run`, as `action` does for a form. */
export function clicked(button, run) {
  onClick(button, guarded(run));
}

function guarded(run) {
  return async () => {
    try {
      await run();
    } catch (error) {
      if (sessionGone(error)) return toSignIn();
      throw error;
    }
  };
}

export function element(tag, text, className) {
  const el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (className) el.className = className;
  return el;
}

/** A button made by a script (a row of a list) that runs `run` when clicked, as `clicked` does. */
export function button(text, className, run) {
  const b = element("button", text, className);
  b.type = "button";
  clicked(b, run);
  return b;
}

if (!gatehouse.signedIn) toSignIn();

// Signed out in another tab (or the session ended and a refresh was refused): leave.
gatehouse.onChange(({ type }) => {
  if (type === "signed-out" && !left) toSignIn();
});

clicked($("sign-out"), async () => {
  await gatehouse.logout("current").catch(() => {});
  toSignIn();
});

async function start() {
  try {
    await reload();
    $("account").hidden = false;
    await loadLists();
  } catch (error) {
    if (sessionGone(error)) return toSignIn();
    showError(error);
  }
}

// The sections' modules run after this one and before DOMContentLoaded (module scripts are
// deferred, in document order): by then every section has been added.
if (gatehouse.signedIn) document.addEventListener("DOMContentLoaded", start);
