// Connected applications: the third-party clients the person allowed (docs/api.md §11), each
// with a remove button that withdraws the consent and ends the client's sessions.
import { $, showStatus, when } from "/assets/pages/ui.js";
import { api, button, element, section } from "/assets/pages/account.js";

async function loadApps() {
  const { items } = await api("GET", "/auth/consents");
  $("app-none").hidden = items.length > 0;
  $("app-list").replaceChildren(
    ...items.map((c) => {
      const li = element("li");
      li.dataset.client = c.clientId;
      const what = element("div", undefined, "what");
      what.append(
        element("span", c.clientName),
        element("small", `${(c.described ?? c.scopes).join("; ")} · allowed ${when(c.grantedAt)}`),
      );
      li.append(
        what,
        button("Remove", "secondary", async () => {
          await api("DELETE", `/auth/consents/${c.clientId}`);
          showStatus(`${c.clientName} was removed.`, $("app-list"));
          await loadApps();
        }),
      );
      return li;
    }),
  );
}

section({ id: "apps", load: loadApps });
