// Verification of an address (a new account's, or the new one of an address change). A click
// consumes the token, not the opening of the link: mail scanners open links too. Opening it only
// checks it, to show the address it confirms (or that the link is dead).
import { $, focus, gatehouse, linkToken, onSubmit, showError, showStatus } from "/assets/pages/ui.js";

const form = $("verify");
const token = linkToken();
if (!token) {
  showError(new Error("This link is incomplete: open the whole link from the mail."));
} else {
  try {
    const { email } = await gatehouse.request("POST", "/auth/email/verify/check", { token }, { auth: false });
    $("verify-email-address").textContent = email;
    form.hidden = false;
  } catch (error) {
    showError(error);
  }
  onSubmit(form, async () => {
    await gatehouse.request("POST", "/auth/email/verify", { token }, { auth: false });
    form.hidden = true;
    showStatus("Your address is verified.");
    focus($("title"));
  });
}
