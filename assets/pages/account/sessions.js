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

async function loadSessions() {
  const { items } = await api("GET", "/auth/sessions");
  $("session-list").replaceChildren(
    ...items.map((s) => {
      const li = element("li");
      li.dataset.session = s.id;
      const what = element("div", undefined, "what");
      what.append(
        element("span", s.current ? `${device(s.userAgent)} (this browser)` : device(s.userAgent)),
        element("small", `${s.ip ?? "unknown address"} · last active ${when(s.lastUsedAt)} · since ${when(s.createdAt)}`),
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
