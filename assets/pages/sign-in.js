// Sign-in: password, then a TOTP or recovery code when the account has 2FA; or a passkey.
import { $, GatehouseError, focus, gatehouse, onClick, onSubmit, returnTo, showError, showStatus } from "/assets/pages/ui.js";

const passwordStep = $("password-step");
const codeStep = $("code-step");

// Sent here by forward-auth because the page asked for a second factor the session lacks, or by
// an authorization that asks for a new sign-in (prompt=login, max_age): sign in again rather
// than going straight back.
const secondFactorAsked = $("second-factor-notice") !== null || $("again-notice") !== null;

const query = new URLSearchParams(location.search);
// Back from a provider's callback (docs/api.md §14): its sign-in waits here to be collected.
const federated = query.get("federated") === "1";

/** The session cookie for the site's guarded web applications (docs/api.md §6b). */
function setCookie() {
  return gatehouse.request("POST", "/auth/browser-session");
}

// Signing in again for a second factor replaces this browser's session: the old one (without the
// factor) ends once the new one exists, before the new one's cookie is set (the logout's answer
// clears the cookie).
// So does a sign-in through a provider.
const replaced =
  gatehouse.signedIn && (secondFactorAsked || federated) ? gatehouse.getAccessToken().catch(() => null) : null;

async function endReplaced() {
  const token = await replaced;
  if (!token) return;
  await fetch("/api/v1/auth/logout", { method: "POST", headers: { Authorization: `Bearer ${token}` } }).catch(
    () => {},
  );
}

async function done() {
  await endReplaced();
  await setCookie();
  location.assign(returnTo());
}

// An authorization's login_hint (docs/api.md §11): the address, typed in already.
const loginHint = new URLSearchParams(location.search).get("login_hint");
if (loginHint && $("email").value === "") $("email").value = loginHint;

// ---- other identity providers (docs/api.md §14) ----

let providers = [];
// The provider whose domains cover the typed address: it signs that address in, not a password.
let ssoProvider = null;

/** What went wrong at a provider, by the code the callback put in `?error=` (never its own text). */
function providerFailure(code, name) {
  const at = name || "the provider";
  switch (code) {
    case "provider_unknown":
      return "That sign-in provider is not known here.";
    case "provider_unavailable":
      return `${at} cannot be reached right now. Try again in a moment, or sign in another way.`;
    case "provider_denied":
      return `The sign-in at ${at} was cancelled or refused: you are not signed in.`;
    case "provider_error":
      return `${at} could not complete the sign-in. Please try again.`;
    case "provider_invalid":
      return `The answer from ${at} could not be verified, so you were not signed in. Try again; if it keeps happening, tell your administrator.`;
    case "expired":
      return "This sign-in took too long, or was started in another browser or tab. Please start again.";
    case "account_exists":
      return `An account with your address exists already. Sign in with its password, then link ${at} under Security on your account page.`;
    case "no_account":
      return `No account here belongs to your ${at} identity. Ask an administrator for one.`;
    case "email_missing":
      return `${at} did not give your e-mail address, which an account here needs.`;
    case "email_not_verified":
      return `Your e-mail address is not confirmed yet (${at} did not confirm it, or the link we mailed was not opened).`;
    case "account_disabled":
      return "This account is disabled.";
    case "wrong_provider":
      return `${at} cannot sign in this address: addresses of an organisation's domain sign in through that organisation's own provider. Type your address above to find it.`;
    default:
      return "The sign-in did not succeed. Please try again.";
  }
}

function nameOf(id) {
  return providers.find((p) => p.id === id)?.name;
}

/** The provider that covers `email`'s domain (or a parent domain of it), if any. */
function providerFor(email) {
  const at = email.lastIndexOf("@");
  if (at < 0) return null;
  const domain = email.slice(at + 1).toLowerCase();
  return (
    providers.find((p) => p.domains.some((d) => domain === d || domain.endsWith(`.${d}`))) ?? null
  );
}

function toProvider(provider, hint) {
  location.assign(gatehouse.providerSignInUrl(provider.id, returnTo(), hint));
}

/** An address under a provider's domains: no password field, the button goes to the provider. */
function followEmail() {
  ssoProvider = providerFor($("email").value.trim());
  $("password-field").hidden = ssoProvider !== null;
  $("sso-notice").hidden = ssoProvider === null;
  $("sign-in").textContent = ssoProvider ? `Continue with ${ssoProvider.name}` : "Sign in";
  if (ssoProvider) {
    $("sso-notice").textContent = `Addresses at this domain sign in with ${ssoProvider.name}.`;
  }
  if (!passwordStep.hidden) showProvidersStep(true);
}

function showProviders() {
  const list = $("provider-list");
  list.replaceChildren(
    ...providers.map((p) => {
      const li = document.createElement("li");
      if (p.available) {
        const a = document.createElement("a");
        a.className = "button secondary";
        a.href = gatehouse.providerSignInUrl(p.id, returnTo());
        a.textContent = `Sign in with ${p.name}`;
        li.append(a);
      } else {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "secondary";
        b.disabled = true;
        b.textContent = `${p.name} (unavailable right now)`;
        li.append(b);
      }
      return li;
    }),
  );
  showProvidersStep(true);
}

/**
 * The providers' buttons belong to the first step, and give way to "Continue with …" when the
 * typed address is a provider's: one "or" between the password and the other ways in.
 */
function showProvidersStep(shown) {
  $("providers").hidden = !shown || providers.length === 0 || ssoProvider !== null;
  const passkeyShown = $("passkey-step") !== null && !$("passkey-step").hidden;
  $("providers-or").hidden = passkeyShown;
}

const providersRead = gatehouse.listProviders().then(
  (items) => {
    providers = items;
    showProviders();
    followEmail();
  },
  () => {},
);
$("email").addEventListener("input", followEmail);

if (query.has("error")) {
  const code = query.get("error");
  providersRead.then(() => showError(new GatehouseError(providerFailure(code, nameOf(query.get("provider"))))));
}

/** Collects the sign-in a provider's callback finished in this browser. */
async function finishFederated() {
  // Whoever was signed in here before is replaced by the person who came back from the provider
  // (done() ends that session); a refresh of it still under way must not land after the new tokens.
  await replaced;
  try {
    const result = await gatehouse.finishProviderSignIn();
    if (!result.twoFactorRequired) return done();
    passwordStep.hidden = true;
    codeStep.hidden = false;
    showPasskeyStep(false);
    showStatus("Signed in at the provider. Now your second factor.");
    focus($("code"));
  } catch (error) {
    showError(error.code === "TOKEN_INVALID" ? new GatehouseError(providerFailure("expired")) : error);
  }
}

function restart(message) {
  codeStep.hidden = true;
  passwordStep.hidden = false;
  showPasskeyStep(true);
  $("code").value = "";
  $("password").value = "";
  if (message) showError(message);
  focus($("password"));
}

const webAuthn = typeof window.PublicKeyCredential !== "undefined";

/** "Sign in with a passkey" belongs to the first step only. */
function showPasskeyStep(shown) {
  if ($("passkey-step")) $("passkey-step").hidden = !(shown && webAuthn);
  showProvidersStep(shown);
}

if (federated) finishFederated();

if (gatehouse.signedIn && !secondFactorAsked && !federated && !query.has("error")) {
  // Already signed in here (another tab, an earlier visit): no need to ask again. The cookie is
  // set again first (it may be missing: an application sent the browser here for want of one).
  // A session that has ended leaves the form here.
  setCookie().then(
    () => location.replace(returnTo()),
    () => {},
  );
}

onSubmit(
  passwordStep,
  async () => {
    const email = $("email").value.trim();
    if (ssoProvider) return toProvider(ssoProvider, email);
    let result;
    try {
      result = await gatehouse.login(email, $("password").value);
    } catch (error) {
      const provider = error.code === "SSO_REQUIRED" && providers.find((p) => p.id === error.details?.provider);
      if (provider) return toProvider(provider, email);
      if (error.code === "INVALID_CREDENTIALS") {
        // Announced by the alert; the password is typed again from an empty field.
        $("password").value = "";
        focus($("password"));
      }
      throw error;
    }
    if (!result.twoFactorRequired) return done();
    passwordStep.hidden = true;
    codeStep.hidden = false;
    showPasskeyStep(false);
    showStatus("Password accepted. Now the second factor.");
    focus($("code"));
  },
  { email: "email", password: "password" },
);

onSubmit(
  codeStep,
  async () => {
    try {
      await gatehouse.verifyTwoFactor($("code").value.trim());
    } catch (error) {
      if (error.code === "TEMP_TOKEN_INVALID") return restart(error);
      $("code").select();
      throw error;
    }
    done();
  },
  { code: "code" },
);

$("restart").addEventListener("click", () => restart());

// A code from the app is six digits (a phone shows its number pad); a recovery code has letters.
let recoveryCode = false;
$("use-recovery").addEventListener("click", () => {
  recoveryCode = !recoveryCode;
  const code = $("code");
  code.inputMode = recoveryCode ? "text" : "numeric";
  code.autocomplete = recoveryCode ? "off" : "one-time-code";
  $("code-label").textContent = recoveryCode ? "Recovery code" : "Code from your authenticator app";
  $("code-hint").textContent = recoveryCode ? "Ten letters and digits, such as k7m2p-x9qrt." : "Six digits.";
  $("use-recovery").textContent = recoveryCode ? "Use a code from the app instead" : "Use a recovery code instead";
  code.value = "";
  focus(code);
});

const passkey = $("passkey");
if (passkey) {
  if (!webAuthn) {
    showPasskeyStep(false);
    $("code-passkey").hidden = true;
  } else {
    // The second factor with a passkey instead of a code (after the password).
    onClick($("code-passkey"), async () => {
      try {
        await gatehouse.verifyTwoFactorWithPasskey();
      } catch (error) {
        if (error.code === "TEMP_TOKEN_INVALID") return restart(error);
        throw error;
      }
      done();
    });
    onClick(passkey, async () => {
      // With an address typed, that account's passkeys are offered; without, any this browser
      // holds for the site.
      await gatehouse.passkeyLogin($("email").value.trim() || undefined);
      done();
    });
  }
}
