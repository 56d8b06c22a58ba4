// The device page (docs/api.md §11, RFC 8628): the person types the code a command-line tool or an
// agent shows (or follows its link with the code filled in), sees which application asks for
// what, and allows or denies it. Signed in here, the person's token answers through
// POST /api/v1/oauth2/device: no other site can read it, so no cross-site form can approve a device.
import { chosenOrg, showOrgs, showScopes } from "/assets/pages/consent.js";
import { $, focus, gatehouse, onClick, onSubmit } from "/assets/pages/ui.js";

const query = new URLSearchParams(location.search);

/** To /sign-in, which comes back here with the code still in the address. */
function signIn(code) {
  const back = new URL("/device", location.origin);
  if (code) back.searchParams.set("user_code", code);
  const to = new URL("/sign-in", location.origin);
  to.searchParams.set("return_to", back.href);
  location.replace(to.href);
}

function ask(userCode, consent, orgId) {
  return gatehouse.request("POST", "/oauth2/device", { userCode, consent, orgId });
}

/** The code as the device shows it, however it was typed: `BCDF-GHJK`. */
function shown(typed) {
  const letters = typed.toUpperCase().replace(/[^A-Z]/g, "");
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : typed;
}

async function showConsent(userCode, answer) {
  $("client-name").textContent = answer.client.name;
  $("shown-code").textContent = shown(userCode);
  showScopes(answer);
  showOrgs(answer);
  const me = await gatehouse.request("GET", "/auth/me").catch(() => null);
  $("who").textContent = me ? me.email : "you";
  $("enter").hidden = true;
  $("consent").hidden = false;
  focus($("consent-title"));
  const decide = async (consent) => {
    const done = await ask(userCode, consent, consent ? chosenOrg() : undefined);
    showDone(done.status, answer.client.name);
  };
  onClick($("allow"), () => decide(true));
  onClick($("deny"), () => decide(false));
}

function showDone(status, name) {
  const approved = status === "approved";
  $("done-title").textContent = approved ? "Device connected" : "Request denied";
  $("done-text").textContent = approved
    ? `${name} is signed in on your device now. You can close this window.`
    : `${name} was not given access. You can close this window.`;
  $("consent").hidden = true;
  $("done").hidden = false;
  focus($("done-title"));
}

function start() {
  const given = query.get("user_code") ?? "";
  if (!gatehouse.signedIn) return signIn(given);
  const input = $("user-code");
  input.value = given;
  onSubmit(
    $("enter"),
    async () => {
      const userCode = input.value.trim();
      try {
        await showConsent(userCode, await ask(userCode));
      } catch (error) {
        // The session here ended (signed out elsewhere, revoked): sign in again.
        if (error.status === 401) return signIn(userCode);
        throw error;
      }
    },
    { userCode: "user-code" },
  );
  // With the code in the link, the person still presses Continue: a page that asked at once
  // would put "Allow" one click from a link someone else sent.
  if (given) input.focus();
}

start();
