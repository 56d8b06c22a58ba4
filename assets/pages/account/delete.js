// Deleting the account: after the password (and a code, with 2FA), the account, its sessions and
// its data go; the page stays to say so.
import { $, focus, gatehouse, showStatus } from "/assets/pages/ui.js";
import { action, api, element, leaving, me, section } from "/assets/pages/account.js";

section({
  id: "delete",
  show(account) {
    $("delete-code-field").hidden = !account.twoFactorEnabled;
  },
});

action(
  $("delete-form"),
  async () => {
    const body = { password: $("delete-password").value };
    if (me().twoFactorEnabled) body.code = $("delete-code").value.trim();
    await api("DELETE", "/auth/me", body);
    leaving();
    // The session died with the account: forget its tokens (the call itself fails, and that is fine).
    await gatehouse.logout("current").catch(() => {});
    $("account").replaceChildren(element("p", "Your account was deleted."));
    document.querySelector(".who")?.remove();
    showStatus("Your account was deleted.");
    focus($("title"));
  },
  { password: "delete-password", code: "delete-code" },
);
