// What the consent screens share (the authorization page, docs/api.md §11, and the device page):
// the scopes asked, in the words the server gives, and the organisation the application will act
// in (docs/api.md §13). Each page has `#scopes`, `#org-choice`, `#org` and `#org-hint`.
import { $ } from "/assets/pages/ui.js";

/** The scopes of a consent answer, in words: the OpenID scopes' and each business API's own. */
export function showScopes(answer) {
  const details = answer.scopeDetails ?? answer.scopes.map((scope) => ({ scope, description: scope }));
  $("scopes").replaceChildren(
    ...details.map(({ scope, description }) => {
      const item = document.createElement("li");
      item.textContent = description;
      item.dataset.scope = scope;
      return item;
    }),
  );
}

/**
 * The organisation the client will act in: the client's own when it is bound to one, else one of
 * the person's, or none (their own data).
 */
export function showOrgs(answer) {
  const orgs = answer.organisations ?? [];
  if (!orgs.length) return;
  const select = $("org");
  const options = orgs.map((org) => new Option(`${org.name} (${org.slug})`, org.id));
  if (!answer.orgFixed) options.unshift(new Option("Only me: my own data", ""));
  select.replaceChildren(...options);
  select.value = answer.orgId ?? "";
  select.disabled = answer.orgFixed;
  $("org-hint").textContent = answer.orgFixed
    ? "This application belongs to this organisation."
    : "The application sees and changes what you share with the organisation you choose.";
  $("org-choice").hidden = false;
}

/** The organisation chosen on the screen, if one may be chosen: `undefined` for none. */
export function chosenOrg() {
  return $("org-choice").hidden ? undefined : $("org").value || undefined;
}
