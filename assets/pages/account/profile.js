// Profile: the name, the address and whether it is verified, a new verification link, and a
// change of address (a link to the new address; the change happens when it comes back).
import { $, showStatus, when } from "/assets/pages/ui.js";
import { action, api, clicked, confirmed, me, section } from "/assets/pages/account.js";

section({
  id: "profile",
  show(account) {
    $("profile-name").textContent = account.fullName;
    $("profile-email").textContent = account.email;
    const verified = $("profile-verified");
    verified.textContent = account.emailVerified ? "(verified)" : "(not verified yet)";
    verified.classList.toggle("ok", Boolean(account.emailVerified));
    $("resend-verification").hidden = Boolean(account.emailVerified);
    $("profile-created").textContent = when(account.createdAt);
  },
});

clicked($("resend-verification"), async () => {
  await api("POST", "/auth/email/verify/resend");
  showStatus(`A new verification link is on its way to ${me().email}.`, $("resend-verification"));
});

action(
  $("email-form"),
  async () => {
    const form = $("email-form");
    const newEmail = $("new-email").value.trim();
    await confirmed(() => api("POST", "/auth/email", { newEmail }));
    form.reset();
    showStatus(`We mailed a link to ${newEmail}. Your address changes when you open it.`, form);
  },
  { newEmail: "new-email" },
);
