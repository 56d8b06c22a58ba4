// An invitation. An operator's (docs/api.md §7) or an organisation's to a new address: the
// account's first password, then straight into the account. An organisation's to an address that
// has an account (§13): signed in, one click joins; signed out, sign in first.
import {
  $,
  GatehouseError,
  gatehouse,
  linkToken,
  onClick,
  onSubmit,
  showError,
  showStatus,
} from "/assets/pages/ui.js";

const form = $("accept");
const join = $("join");
const token = linkToken();
if (!token) {
  form.hidden = true;
  showError(new Error("This link is incomplete: open the whole link from the mail."));
} else {
  if (gatehouse.signedIn) {
    form.hidden = true;
    join.hidden = false;
    $("join-email").textContent = gatehouse.user?.email ?? "";
    onClick($("join-button"), async () => {
      const org = await gatehouse.acceptOrgInvitation(token).catch((error) => {
        if (error?.code !== "FORBIDDEN") throw error;
        throw new GatehouseError("this invitation was sent to another address: sign in with that one");
      });
      showStatus(`You joined ${org.name}.`, $("join-button"));
      location.assign("/account");
    });
    onClick($("other-account"), async () => {
      await gatehouse.logout().catch(() => {});
      join.hidden = true;
      form.hidden = false;
    });
  }
  onSubmit(
    form,
    async () => {
      await gatehouse.acceptInvitation(token, $("new-password").value, $("full-name").value.trim());
      location.assign("/account");
    },
    { password: "new-password", token: "new-password", fullName: "full-name" },
  );
}
