// An invitation: the account's first password, then straight into the account.
import { $, adoptTokens, gatehouse, linkToken, onSubmit, showError } from "/assets/pages/ui.js";

const form = $("accept");
const token = linkToken();
if (!token) {
  form.hidden = true;
  showError(new Error("This link is incomplete: open the whole link from the mail."));
} else {
  onSubmit(
    form,
    async () => {
      const tokens = await gatehouse.request(
        "POST",
        "/auth/invitations/accept",
        { token, password: $("new-password").value },
        { auth: false },
      );
      adoptTokens(tokens);
      location.assign("/account");
    },
    { password: "new-password", token: "new-password" },
  );
}
