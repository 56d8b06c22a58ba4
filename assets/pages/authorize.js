// The authorization page (docs/api.md §11): the server checked the request already. Signed in
// here, the person's token asks POST /api/v1/oauth2/authorize where to go; it may answer that the
// person must allow the client some scopes (the consent screen), or sign in (again) first.
import { chosenOrg, showOrgs, showScopes } from "/assets/pages/consent.js";
import { $, focus, gatehouse, onClick, showError } from "/assets/pages/ui.js";

const query = new URLSearchParams(location.search);

/**
 * To /sign-in, which comes back here. `again`: the session is too old (max_age) or the client
 * asked for a new sign-in (prompt=login): the new sign-in satisfies both, so the way back asks for
 * neither again.
 */
function signIn(again) {
  const back = new URL(location.href);
  if (again) {
    const prompt = (back.searchParams.get("prompt") ?? "").split(" ").filter((p) => p && p !== "login");
    if (prompt.length) back.searchParams.set("prompt", prompt.join(" "));
    else back.searchParams.delete("prompt");
    back.searchParams.delete("max_age");
  }
  const to = new URL("/sign-in", location.origin);
  to.searchParams.set("return_to", back.href);
  to.searchParams.set("client_id", query.get("client_id") ?? "");
  if (again) to.searchParams.set("again", "1");
  const hint = query.get("login_hint");
  if (hint) to.searchParams.set("login_hint", hint);
  location.replace(to.href);
}

function ask(consent, orgId) {
  const text = (name) => query.get(name) || undefined;
  const maxAge = query.get("max_age");
  return gatehouse.request("POST", "/oauth2/authorize", {
    clientId: query.get("client_id") ?? "",
    redirectUri: query.get("redirect_uri") ?? "",
    scope: query.get("scope") ?? "",
    state: text("state"),
    codeChallenge: text("code_challenge"),
    codeChallengeMethod: text("code_challenge_method"),
    nonce: text("nonce"),
    prompt: text("prompt"),
    maxAge: maxAge === null ? undefined : Number(maxAge),
    resource: text("resource"),
    consent,
    orgId,
  });
}

/** Follows an answer; true when the page stays (the consent screen). */
async function follow(answer) {
  if (answer.redirectTo && answer.confirmRedirect) {
    showUnvouched(answer.redirectTo);
    return false;
  }
  if (answer.redirectTo) {
    location.replace(answer.redirectTo);
    return false;
  }
  if (answer.loginRequired) {
    signIn(true);
    return false;
  }
  if (answer.consentRequired) {
    await showConsent(answer);
    return true;
  }
  return false;
}

/**
 * An error for a self-registered application the person has not used here (docs/api.md §11):
 * said, with the way back as a link naming its host, never followed at once.
 */
function showUnvouched(to) {
  const url = new URL(to);
  const description = url.searchParams.get("error_description") ?? url.searchParams.get("error");
  $("unvouched-text").textContent = `The request cannot be completed: ${description}.`;
  $("unvouched-host").textContent = url.host;
  const link = $("unvouched-link");
  link.href = url.href;
  link.textContent = `Continue to ${url.host}`;
  $("working").hidden = true;
  $("consent").hidden = true;
  $("unvouched").hidden = false;
  focus($("unvouched-title"));
}

async function showConsent(answer) {
  $("client-name").textContent = answer.client.name;
  $("redirect-host").textContent = answer.client.redirectHost;
  $("self-registered").hidden = !answer.client.selfRegistered;
  showScopes(answer);
  showOrgs(answer);
  const me = await gatehouse.request("GET", "/auth/me").catch(() => null);
  $("who").textContent = me ? me.email : "you";
  $("working").hidden = true;
  $("consent").hidden = false;
  focus($("consent-title"));
}

async function decide(consent) {
  await follow(await ask(consent, consent ? chosenOrg() : undefined));
}

async function start() {
  if (!gatehouse.signedIn) return signIn((query.get("prompt") ?? "").split(" ").includes("login"));
  let answer;
  try {
    answer = await ask(undefined);
  } catch (error) {
    // The session here ended (signed out elsewhere, revoked): sign in again.
    if (error.status === 401) return signIn(false);
    throw error;
  }
  if (await follow(answer)) {
    onClick($("allow"), () => decide(true));
    onClick($("deny"), () => decide(false));
    // Someone else's session in this browser: signed out here, then signed in as oneself, back
    // to the same request.
    onClick($("not-me"), async () => {
      await gatehouse.logout().catch(() => {});
      signIn(false);
    });
  }
}

start().catch((error) => {
  $("working").hidden = true;
  showError(error);
});
