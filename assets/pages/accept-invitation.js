// An invitation: the account's first password, then straight into the account.
import { $, gatehouse, linkToken, onSubmit, showError } from "/assets/pages/ui.js";

const form = $("accept");
const token = linkToken();
if (!token) {
  form.hidden = true;
  showError(new Error("This link is incomplete: open the whole link from the mail."));
} else {
  onSubmit(
    form,
    async () => {
      await gatehouse.acceptInvitation(token, $("new-password").value);
      location.assign("/account");
    },
    { password: "new-password", token: "new-password" },
  );
}
