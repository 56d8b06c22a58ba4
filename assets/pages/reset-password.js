// Reset: the mailed link's token and a new password. The link is checked first, so that a dead
// one is said to be dead before a password is typed, and the page names the account it is for.
import { $, focus, gatehouse, linkToken, onSubmit, showError, showStatus } from "/assets/pages/ui.js";

const form = $("reset");
const token = linkToken();
if (!token) {
  showError(new Error("This link is incomplete: open the whole link from the mail."));
} else {
  try {
    const { email } = await gatehouse.request("POST", "/auth/password/reset/check", { token }, { auth: false });
    $("account-email").textContent = email;
    $("link-account").hidden = false;
    form.hidden = false;
    focus($("new-password"));
  } catch (error) {
    showError(error);
  }
  onSubmit(
    form,
    async () => {
      await gatehouse.request(
        "POST",
        "/auth/password/reset",
        { token, newPassword: $("new-password").value },
        { auth: false },
      );
      form.hidden = true;
      // The reset ended every session, this browser's too.
      await gatehouse.logout().catch(() => {});
      showStatus("Your password was changed, and every session signed out. Sign in with the new password.");
      focus($("title"));
    },
    { newPassword: "new-password", token: "new-password" },
  );
}
