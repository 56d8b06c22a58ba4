// API keys (docs/api.md §12): the person's keys with a delete button each, and making one (the
// password confirmed once for a few minutes), whose key is shown this once with a copy button.
import { $, focus, showError, showStatus, when } from "/assets/pages/ui.js";
import { action, api, button, clicked, confirmed, element, section } from "/assets/pages/account.js";

const DAY_MS = 86_400_000;

/** The choices of access: everything a key may do, then each scope alone, in the APIs' words. */
function showScopes(scopes) {
  const select = $("key-access");
  if (select.options.length) return;
  const apis = [...new Set(scopes.map((s) => s.resource))];
  const all = new Option(`Everything: ${apis.join(", ")}`, scopes.map((s) => s.scope).join(" "));
  const each = scopes.map((s) => new Option(`${s.description} (${s.resource})`, s.scope));
  select.replaceChildren(all, ...(scopes.length > 1 ? each : []));
}

async function loadKeys() {
  const { items, scopes } = await api("GET", "/auth/api-keys");
  showScopes(scopes ?? []);
  $("key-none").hidden = items.length > 0;
  $("key-list").replaceChildren(
    ...items.map((k) => {
      const li = element("li");
      li.dataset.key = k.id;
      const what = element("div", undefined, "what");
      const expires = k.expiresAt ? `expires ${when(k.expiresAt)}` : "never expires";
      what.append(
        element("span", k.name),
        element("small", `ghk_${k.prefix}… · ${k.scopes.join(", ")} · ${expires}`),
        element("small", `made ${when(k.createdAt)} · last used ${when(k.lastUsedAt)}`),
      );
      li.append(
        what,
        button("Delete", "secondary", async () => {
          await api("DELETE", `/auth/api-keys/${k.id}`);
          showStatus(`The key “${k.name}” was deleted: it no longer works.`, $("key-list"));
          await loadKeys();
        }),
      );
      return li;
    }),
  );
}

function hideKey() {
  $("key-value").textContent = "";
  $("key-made").hidden = true;
}

action(
  $("key-form"),
  async () => {
    const form = $("key-form");
    const days = Number($("key-expiry").value);
    const body = {
      name: $("key-name").value,
      scopes: $("key-access").value.split(" ").filter(Boolean),
    };
    // "Never" is asked for in so many words: left out, the API gives a key 90 days.
    body.expiresAt = days ? new Date(Date.now() + days * DAY_MS).toISOString() : null;
    const made = await confirmed(() => api("POST", "/auth/api-keys", body));
    form.reset();
    $("key-value").textContent = made.key;
    $("key-made").hidden = false;
    $("copy-key").onclick = async () => {
      try {
        await navigator.clipboard.writeText(made.key);
        showStatus("The key was copied.", $("key-value"));
      } catch {
        showError(new Error("The key could not be copied: select and copy it by hand."), {}, $("key-value"));
      }
    };
    focus($("key-made-title"));
    await loadKeys();
  },
  { name: "key-name", scopes: "key-access", expiresAt: "key-expiry" },
);

// The key leaves the page once its owner says it is kept.
clicked($("key-saved"), async () => {
  hideKey();
  focus($("key-create-title"));
});

section({ id: "keys", load: loadKeys });
