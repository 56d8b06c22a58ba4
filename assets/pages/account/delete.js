// Deleting the account: once the session is re-authenticated (and with a code, with 2FA), the account, its sessions and
// its data go; the page stays to say so.
import { $, focus, gatehouse, showStatus } from "/assets/pages/ui.js";
import { action, api, confirmed, element, leaving, me, section } from "/assets/pages/account.js";

section({
  id: "delete",
  show(account) {
    $("delete-code-field").hidden = !account.twoFactorEnabled;
  },
});

action(
  $("delete-form"),
  async () => {
    const body = {};
    if (me().twoFactorEnabled) body.code = $("delete-code").value.trim();
    await confirmed(() => api("DELETE", "/auth/me", body));
    leaving();
    // The session died with the account: forget its tokens (the call itself fails, and that is fine).
    await gatehouse.logout("current").catch(() => {});
    $("account").replaceChildren(element("p", "Your account was deleted."));
    document.querySelector(".who")?.remove();
    showStatus("Your account was deleted.");
    focus($("title"));
  },
  { code: "delete-code" },
);
