// Sign-in: password, then a TOTP or recovery code when the account has 2FA; or a passkey.
import { $, focus, gatehouse, onClick, onSubmit, returnTo, showError, showStatus } from "/assets/pages/ui.js";

const passwordStep = $("password-step");
const codeStep = $("code-step");

// Sent here by forward-auth because the page asked for a second factor the session lacks, or by
// an authorization that asks for a new sign-in (prompt=login, max_age): sign in again rather
// than going straight back.
const secondFactorAsked = $("second-factor-notice") !== null || $("again-notice") !== null;

/** The session cookie for the site's guarded web applications (docs/api.md §6b). */
function setCookie() {
  return gatehouse.request("POST", "/auth/browser-session");
}

// Signing in again for a second factor replaces this browser's session: the old one (without the
// factor) ends once the new one exists, before the new one's cookie is set (the logout's answer
// clears the cookie).
const replaced = gatehouse.signedIn && secondFactorAsked ? gatehouse.getAccessToken().catch(() => null) : null;

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
}

if (gatehouse.signedIn && !secondFactorAsked) {
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
    let result;
    try {
      result = await gatehouse.login($("email").value.trim(), $("password").value);
    } catch (error) {
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
