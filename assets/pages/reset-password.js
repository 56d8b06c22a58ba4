// Reset: the mailed link's token and a new password.
import { $, focus, gatehouse, linkToken, onSubmit, showError, showStatus } from "/assets/pages/ui.js";

const form = $("reset");
const token = linkToken();
if (!token) {
  form.hidden = true;
  showError(new Error("This link is incomplete: open the whole link from the mail."));
} else {
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
