// What every page script shares: the client, messages announced to screen readers (beside the
// action that caused them, or the page's), busy forms, field errors from the envelope's details,
// and where to go after signing in.
import { Gatehouse, GatehouseError } from "/assets/gatehouse.js";

export { GatehouseError };
export const gatehouse = new Gatehouse();

export const $ = (id) => document.getElementById(id);

/** The sign-in page's checked `return_to` (the server put it there), else the account page. */
export function returnTo() {
  return document.body.dataset.returnTo || "/account";
}

/** The `token` of a mailed link, or null. */
export function linkToken() {
  return new URLSearchParams(location.search).get("token");
}

/** A sentence for a failure: the service's own message, made plainer for a few codes. */
export function describe(error) {
  if (!(error instanceof GatehouseError)) return "Something went wrong. Please try again.";
  switch (error.code) {
    case "NETWORK_ERROR":
      return "The service cannot be reached. Check your connection and try again.";
    case "RATE_LIMITED": {
      const wait = error.details?.retryAfter;
      return wait ? `Too many attempts. Try again in ${wait} seconds.` : "Too many attempts. Try again later.";
    }
    case "INVALID_CREDENTIALS":
      return error.status === 401 ? "The e-mail address or the password is wrong." : "The password is wrong.";
    case "INVALID_2FA_CODE": {
      const left = error.details?.attemptsRemaining;
      return left === undefined ? "That code is wrong." : `That code is wrong. Attempts left: ${left}.`;
    }
    case "EMAIL_NOT_VERIFIED":
      return "Confirm your e-mail address first: open the link we mailed to it.";
    case "LINK_INVALID":
      return "This link is no longer valid: it was used already, has expired, or a newer one was sent.";
    case "PASSKEY_CANCELLED":
      return "No passkey was used.";
    case "EMAIL_TAKEN":
      return "An account with this address exists already: sign in with it instead.";
    default:
      return error.message ? sentence(error.message) : "Something went wrong. Please try again.";
  }
}

/** The service's messages are lower-case clauses ("the password is wrong"): shown as sentences. */
function sentence(text) {
  const capital = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/**
 * Where the messages about `element` go: the `.status` and `.alert` of its closest
 * `data-messages` block (an action's own, so that a message appears beside what caused it), else
 * the page's.
 */
function messages(element) {
  const block = element?.closest?.("[data-messages]");
  const status = block?.querySelector(":scope > .status");
  const alert = block?.querySelector(":scope > .alert");
  return status && alert ? { status, alert, block } : { status: $("status"), alert: $("error"), block: null };
}

/**
 * Shows `error` in the alert beside `where` (announced by screen readers: role=alert), else the
 * page's, and marks the named fields (envelope field name → input id).
 */
export function showError(error, fields = {}, where) {
  const { status, alert } = messages(where);
  alert.textContent = describe(error);
  alert.hidden = false;
  status.textContent = "";
  const reported = error?.details?.fields ?? {};
  let first = null;
  for (const [name, inputId] of Object.entries(fields)) {
    const input = $(inputId);
    if (!input) continue;
    const bad = name in reported;
    input.setAttribute("aria-invalid", bad ? "true" : "false");
    if (bad) {
      alert.textContent += ` ${labelOf(input)}: ${reported[name]}.`;
      first ??= input;
    }
  }
  if (first) first.focus();
}

function labelOf(input) {
  return document.querySelector(`label[for="${input.id}"]`)?.textContent ?? input.name;
}

/** Shows a success message beside `where` (else the page's; a polite live region), clearing its alert. */
export function showStatus(text, where) {
  clearError(where);
  messages(where).status.textContent = text;
}

/** Clears the alert beside `where` (else the page's), its status and its marked fields. */
export function clearError(where) {
  const { status, alert, block } = messages(where);
  alert.hidden = true;
  alert.textContent = "";
  status.textContent = "";
  for (const input of (block ?? document).querySelectorAll('[aria-invalid="true"]')) {
    input.setAttribute("aria-invalid", "false");
  }
}

/** Moves the keyboard focus to `element` (headings get tabindex=-1 in the templates). */
export function focus(element) {
  if (element) element.focus();
}

/**
 * Handles `form`'s submission with `action` (async): the submit button is disabled meanwhile, and
 * a failure is shown with `fields` (envelope field name → input id) marked. The buttons start
 * disabled in the HTML, so that nothing is sent before this script runs (without it a submission
 * would reload the page).
 */
export function onSubmit(form, action, fields = {}) {
  const buttons = form.querySelectorAll('button[type="submit"]');
  for (const b of buttons) b.disabled = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if ([...buttons].some((b) => b.disabled)) return;
    for (const b of buttons) b.disabled = true;
    form.setAttribute("aria-busy", "true");
    clearError(form);
    try {
      await action();
    } catch (error) {
      showError(error, fields, form);
    } finally {
      for (const b of buttons) b.disabled = false;
      form.removeAttribute("aria-busy");
    }
  });
}

/** Runs `action` on a click, with the same busy state and error display as a form. */
export function onClick(button, action) {
  button.disabled = false;
  button.addEventListener("click", async () => {
    if (button.disabled) return;
    button.disabled = true;
    clearError(button);
    try {
      await action();
    } catch (error) {
      showError(error, {}, button);
    } finally {
      button.disabled = false;
    }
  });
}

/**
 * A date and time in the reader's own locale, the month in words ("29 Nov 2026, 14:05" or
 * "Nov 29, 2026, 2:05 PM"): never a bare 11/12/2026, which reads as two dates.
 */
export function when(iso) {
  if (!iso) return "never";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

