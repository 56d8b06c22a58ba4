// Sign-in providers (docs/api.md §14): the identities linked to the account, each with an unlink
// button, and the providers not linked yet, each with a link button. Linking leaves for the
// provider (the password confirmed first) and comes back here with `?linked=` or `?link_error=`.
// Without any provider configured the section and its entry in the navigation are not shown.
import { $, GatehouseError, gatehouse, showError, showStatus, when } from "/assets/pages/ui.js";
import { button, confirmed, element, section } from "/assets/pages/account.js";

const query = new URLSearchParams(location.search);
let providers = [];

function nameOf(id) {
  return providers.find((p) => p.id === id)?.name ?? id;
}

/** Why linking did not happen, by the code the callback put in `?link_error=`. */
function linkFailure(code, name) {
  switch (code) {
    case "identity_taken":
      return `That ${name} identity is linked to another account already.`;
    case "already_linked":
      return `Your account is linked to ${name} already.`;
    case "wrong_provider":
      return `${name} cannot be linked: it does not speak for that address, or your address's domain signs in through its own organisation's provider only.`;
    case "provider_denied":
      return `Linking was cancelled or refused at ${name}.`;
    case "provider_unavailable":
      return `${name} cannot be reached right now. Try again in a moment.`;
    case "expired":
      return "Linking took too long, or was started in another browser or tab. Please start again.";
    default:
      return `${name} could not be linked. Please try again.`;
  }
}

/** Why a confirmation through a provider did not happen (`?reauth_error=`). */
function reauthFailure(code, name) {
  switch (code) {
    case "not_linked":
      return `${name} signed in someone else than the identity linked to this account: nothing was confirmed.`;
    case "not_fresh":
      return `${name} did not ask you to sign in again, so nothing was confirmed. Please try again.`;
    case "provider_denied":
      return `The confirmation was cancelled or refused at ${name}.`;
    case "provider_unavailable":
      return `${name} cannot be reached right now. Try again in a moment.`;
    default:
      return `${name} could not confirm it is you. Please try again.`;
  }
}

function hide(hidden) {
  $("identities").hidden = hidden;
  const entry = document.querySelector('nav.sections a[href="#identities"]')?.parentElement;
  if (entry) entry.hidden = hidden;
}

async function loadIdentities() {
  providers = await gatehouse.listProviders().catch(() => []);
  if (providers.length === 0) return hide(true);
  hide(false);
  const linked = await gatehouse.listIdentities();
  $("identity-none").hidden = linked.length > 0;
  $("identity-list").replaceChildren(
    ...linked.map((i) => {
      const li = element("li");
      li.dataset.provider = i.providerId;
      const what = element("div", undefined, "what");
      what.append(
        element("span", i.providerName),
        element("small", `${i.email ?? i.subject} · linked ${when(i.linkedAt)} · last used ${when(i.lastUsedAt)}`),
      );
      li.append(
        what,
        button("Unlink", "secondary", async () => {
          await gatehouse.unlinkIdentity(i.providerId);
          showStatus(`${i.providerName} was unlinked: it no longer signs you in.`, $("identity-list"));
          await loadIdentities();
        }),
      );
      return li;
    }),
  );
  const open = providers.filter((p) => !linked.some((i) => i.providerId === p.id));
  $("identity-offers").replaceChildren(
    ...open.map((p) => {
      const li = element("li");
      li.dataset.provider = p.id;
      const what = element("div", undefined, "what");
      what.append(element("span", p.name), element("small", p.available ? "not linked" : "unavailable right now"));
      const link = button(`Link ${p.name}`, "secondary", async () => {
        location.assign(await confirmed(() => gatehouse.linkIdentity(p.id)));
      });
      link.disabled = !p.available;
      li.append(what, link);
      return li;
    }),
  );
}

async function load() {
  await loadIdentities();
  if (query.has("reauthenticated")) {
    showStatus(
      `You confirmed it is you with ${nameOf(query.get("reauthenticated"))}: this page will not ask again for 5 minutes.`,
    );
  } else if (query.has("reauth_error")) {
    showError(new GatehouseError(reauthFailure(query.get("reauth_error"), nameOf(query.get("provider")))));
  }
  if (query.has("linked")) {
    showStatus(`${nameOf(query.get("linked"))} is linked: you can sign in with it now.`, $("identity-list"));
  } else if (query.has("link_error")) {
    showError(new GatehouseError(linkFailure(query.get("link_error"), nameOf(query.get("provider")))), {}, $("identity-list"));
  }
  if (["linked", "link_error", "reauthenticated", "reauth_error"].some((k) => query.has(k))) {
    // Said once: a reload of the page should not say it again.
    history.replaceState(null, "", "/account#identities");
    $("identities").scrollIntoView();
  }
}

section({ id: "identities", load });
