// Registration (when open), then signing in with the new account.
import { $, focus, gatehouse, onSubmit, showStatus } from "/assets/pages/ui.js";

const form = $("register");
onSubmit(
  form,
  async () => {
    const email = $("email").value.trim();
    const password = $("new-password").value;
    await gatehouse.request(
      "POST",
      "/auth/register",
      { email, password, fullName: $("full-name").value.trim() },
      { auth: false },
    );
    try {
      await gatehouse.login(email, password);
      location.assign("/account");
    } catch (error) {
      if (error.code !== "EMAIL_NOT_VERIFIED") throw error;
      form.hidden = true;
      showStatus(`Your account is made. Open the link we mailed to ${email}, then sign in.`);
      focus($("title"));
    }
  },
  { email: "email", password: "new-password", fullName: "full-name" },
);
