// Sign-in: password, then a TOTP or recovery code when the account has 2FA; or a passkey.
import { $, focus, gatehouse, onClick, onSubmit, returnTo, showError, showStatus } from "/assets/pages/ui.js";

const passwordStep = $("password-step");
const codeStep = $("code-step");

function done() {
  location.assign(returnTo());
}

function restart(message) {
  codeStep.hidden = true;
  passwordStep.hidden = false;
  $("code").value = "";
  $("password").value = "";
  if (message) showError(message);
  focus($("password"));
}

if (gatehouse.signedIn) {
  // Already signed in here (another tab, an earlier visit): no need to ask again.
  location.replace(returnTo());
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

const passkey = $("passkey");
if (passkey) {
  if (typeof window.PublicKeyCredential === "undefined") {
    $("passkey-step").hidden = true;
  } else {
    onClick(passkey, async () => {
      // With an address typed, that account's passkeys are offered; without, any this browser
      // holds for the site.
      await gatehouse.passkeyLogin($("email").value.trim() || undefined);
      done();
    });
  }
}
