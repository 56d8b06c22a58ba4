// Connected applications: every application that acts for the person (docs/api.md §11), a consent
// they gave or a live session (a first-party app, a command-line tool, an agent), with what it may
// do, where it was last used from, and a remove button that ends it everywhere at once.
import { $, showStatus, when } from "/assets/pages/ui.js";
import { api, button, element, section } from "/assets/pages/account.js";

/** What the kind of an application tells the person. */
const KINDS = {
  first_party: "this service's own application",
  operator: "added by this service's operators",
  device: "a command-line tool or device",
  self_registered: "registered itself: its name is its own word",
  metadata_document: "known by its own address",
};

function details(app) {
  const parts = [(app.described ?? app.scopes).join("; "), KINDS[app.kind] ?? app.kind];
  if (app.sessions > 0) {
    const where = app.ip ? ` from ${app.ip}` : "";
    parts.push(`last used ${when(app.lastUsedAt)}${where}`);
  } else if (app.allowedAt) {
    parts.push(`allowed ${when(app.allowedAt)}`);
  }
  return parts.join(" · ");
}

async function loadApps() {
  const { items } = await api("GET", "/auth/connected-apps");
  $("app-none").hidden = items.length > 0;
  $("app-list").replaceChildren(
    ...items.map((app) => {
      const li = element("li");
      li.dataset.client = app.clientId;
      const what = element("div", undefined, "what");
      what.append(element("span", app.name), element("small", details(app)));
      li.append(
        what,
        button("Remove", "secondary", async () => {
          await api("DELETE", `/auth/connected-apps/${app.clientId}`);
          showStatus(`${app.name} was removed.`, $("app-list"));
          await loadApps();
        }),
      );
      return li;
    }),
  );
}

section({ id: "apps", load: loadApps });
