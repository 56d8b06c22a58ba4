// Sessions: where the account is signed in, each with its own sign-out, and "sign out everywhere".
import { $, gatehouse, showStatus, when } from "/assets/pages/ui.js";
import { api, button, clicked, element, section, toSignIn } from "/assets/pages/account.js";

/** "Firefox on Linux" out of a User-Agent header, or the header itself. */
function device(userAgent) {
  if (!userAgent) return "Unknown device";
  const browser = ["Edg", "Firefox", "Chrome", "Safari"].find((b) => userAgent.includes(`${b}/`));
  const system = ["Android", "iPhone", "iPad", "Windows", "Mac OS X", "Linux"].find((s) =>
    userAgent.includes(s),
  );
  if (!browser) return userAgent.slice(0, 80);
  const name = { Edg: "Edge", "Mac OS X": "macOS" };
  return system ? `${name[browser] ?? browser} on ${name[system] ?? system}` : (name[browser] ?? browser);
}

/** How a session was signed in, in words (its RFC 8176 `amr`). */
function how(amr) {
  const has = (m) => (amr ?? []).includes(m);
  const first = has("fed") ? "another provider" : has("hwk") && !has("pwd") ? "a passkey" : "a password";
  const second = has("otp") ? " and a code" : has("hwk") && has("pwd") ? " and a passkey" : has("mfa") ? " and a second factor" : "";
  return `signed in with ${first}${second}`;
}

async function loadSessions() {
  const { items } = await api("GET", "/auth/sessions");
  $("session-list").replaceChildren(
    ...items.map((s) => {
      const li = element("li");
      li.dataset.session = s.id;
      const what = element("div", undefined, "what");
      const name = s.client ? `${s.client.name}, for you` : device(s.userAgent);
      what.append(
        element("span", s.current ? `${name} (this browser)` : name),
        element(
          "small",
          `${s.client ? device(s.userAgent) + " · " : ""}${how(s.amr)} · since ${when(s.createdAt)} · last active ${when(s.lastUsedAt)} · ${s.ip ?? "unknown address"}`,
        ),
      );
      li.append(
        what,
        button("Sign out", "secondary", async () => {
          if (s.current) {
            await gatehouse.logout("current").catch(() => {});
            return toSignIn();
          }
          await api("DELETE", `/auth/sessions/${s.id}`);
          showStatus("That session was signed out.", $("session-list"));
          await loadSessions();
        }),
      );
      return li;
    }),
  );
}

section({ id: "sessions", load: loadSessions });

clicked($("sign-out-everywhere"), async () => {
  await gatehouse.logout("all").catch(() => {});
  toSignIn();
});
