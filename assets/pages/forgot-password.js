// Forgotten password: ask for a reset link. The answer is the same for every address.
import { $, focus, gatehouse, onSubmit, showStatus } from "/assets/pages/ui.js";

const form = $("forgot");
onSubmit(
  form,
  async () => {
    const email = $("email").value.trim();
    await gatehouse.request("POST", "/auth/password/forgot", { email }, { auth: false });
    form.hidden = true;
    showStatus(
      `If an account has the address ${email}, a link to choose a new password is on its way. ` +
        "It works for one hour.",
    );
    focus($("title"));
  },
  { email: "email" },
);
