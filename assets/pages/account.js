// The account page: profile, address and password changes, 2FA, recovery codes, passkeys,
// sessions and deletion. Everything it shows comes from the API through the client library;
// text is set with textContent, never parsed as HTML.
import { $, focus, gatehouse, onClick, onSubmit, showError, showStatus, when } from "/assets/pages/ui.js";

const api = (method, path, body) => gatehouse.request(method, path, body);
let me = null;
// Set once the account is deleted: the page then stays, to say so.
let deleted = false;

function toSignIn() {
  location.replace("/sign-in");
}

if (!gatehouse.signedIn) toSignIn();

// Signed out in another tab (or the session ended and a refresh was refused): leave.
gatehouse.onChange(({ type }) => {
  if (type === "signed-out" && !deleted) toSignIn();
});

/** A failure that means the session is gone sends to sign-in; others are shown. */
function failed(error) {
  if (error?.code === "NOT_SIGNED_IN" || error?.code === "REFRESH_TOKEN_INVALID") return toSignIn();
  showError(error);
}

function element(tag, text, className) {
  const el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (className) el.className = className;
  return el;
}

function button(text, className, action) {
  const b = element("button", text, className);
  b.type = "button";
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await action();
    } catch (error) {
      failed(error);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// ---- profile ----

async function loadProfile() {
  me = await api("GET", "/auth/me");
  $("profile-name").textContent = me.fullName;
  $("profile-email").textContent = me.email;
  const verified = $("profile-verified");
  verified.textContent = me.emailVerified ? "(verified)" : "(not verified yet)";
  verified.classList.toggle("ok", Boolean(me.emailVerified));
  $("resend-verification").hidden = Boolean(me.emailVerified);
  $("profile-created").textContent = when(me.createdAt);
  $("delete-code-field").hidden = !me.twoFactorEnabled;
  showTwoFactor();
}

onClick($("resend-verification"), async () => {
  await api("POST", "/auth/email/verify/resend");
  showStatus(`A new verification link is on its way to ${me.email}.`);
});

onClick($("sign-out"), async () => {
  await gatehouse.logout("current").catch(() => {});
  toSignIn();
});

onSubmit(
  $("email-form"),
  async () => {
    const newEmail = $("new-email").value.trim();
    await api("POST", "/auth/email", { newEmail, password: $("email-password").value });
    $("email-form").reset();
    showStatus(`We mailed a link to ${newEmail}. Your address changes when you open it.`);
  },
  { newEmail: "new-email", password: "email-password" },
);

onSubmit(
  $("password-form"),
  async () => {
    await api("POST", "/auth/password", {
      currentPassword: $("current-password").value,
      newPassword: $("new-password").value,
    });
    $("password-form").reset();
    showStatus("Your password was changed. Your other sessions were signed out.");
    await loadSessions();
  },
  { currentPassword: "current-password", newPassword: "new-password" },
);

// ---- two-factor authentication ----

function showTwoFactor() {
  const on = me.twoFactorEnabled;
  $("twofa-state").textContent = on
    ? `On. Recovery codes left: ${me.recoveryCodesRemaining}.`
    : "Off. Turn it on to ask for a code from your phone after your password.";
  $("twofa-setup-form").hidden = on || !$("twofa-enable-form").hidden;
  $("twofa-codes-form").hidden = !on;
  $("twofa-disable-form").hidden = !on;
  if (on) $("twofa-enable-form").hidden = true;
}

function showRecoveryCodes(codes) {
  const list = $("recovery-list");
  list.replaceChildren(...codes.map((c) => element("li", c)));
  $("recovery-codes").hidden = false;
  focus($("recovery-title"));
}

onSubmit(
  $("twofa-setup-form"),
  async () => {
    const setup = await api("POST", "/auth/2fa/setup", { password: $("setup-password").value });
    $("twofa-setup-form").reset();
    // An SVG in an <img> runs no script; data: images are allowed by the page's CSP.
    $("qr").src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(setup.qrCodeSvg)}`;
    $("secret").textContent = setup.secret;
    $("twofa-setup-form").hidden = true;
    $("twofa-enable-form").hidden = false;
    focus($("enable-code"));
  },
  { password: "setup-password" },
);

onSubmit(
  $("twofa-enable-form"),
  async () => {
    const { recoveryCodes } = await api("POST", "/auth/2fa/enable", {
      code: $("enable-code").value.trim(),
    });
    $("twofa-enable-form").reset();
    $("twofa-enable-form").hidden = true;
    $("qr").removeAttribute("src");
    $("secret").textContent = "";
    await loadProfile();
    showStatus("Two-factor authentication is on.");
    showRecoveryCodes(recoveryCodes);
  },
  { code: "enable-code" },
);

onSubmit(
  $("twofa-codes-form"),
  async () => {
    const { recoveryCodes } = await api("POST", "/auth/2fa/recovery-codes", {
      code: $("regen-code").value.trim(),
    });
    $("twofa-codes-form").reset();
    await loadProfile();
    showStatus("New recovery codes: the old ones no longer work.");
    showRecoveryCodes(recoveryCodes);
  },
  { code: "regen-code" },
);

onSubmit(
  $("twofa-disable-form"),
  async () => {
    await api("POST", "/auth/2fa/disable", {
      password: $("disable-password").value,
      code: $("disable-code").value.trim(),
    });
    $("twofa-disable-form").reset();
    $("recovery-codes").hidden = true;
    await loadProfile();
    showStatus("Two-factor authentication is off.");
    focus($("twofa-title"));
  },
  { password: "disable-password", code: "disable-code" },
);

// ---- passkeys ----

async function loadPasskeys() {
  if (!$("passkeys-section")) return;
  const { items } = await api("GET", "/auth/passkeys");
  const rows = items.map((p) => {
    const li = element("li");
    const what = element("div", undefined, "what");
    const inputId = `passkey-${p.id}`;
    const label = element("label", "Name");
    label.htmlFor = inputId;
    const input = element("input");
    input.id = inputId;
    input.value = p.name;
    input.maxLength = 64;
    what.append(label, input, element("small", `Added ${when(p.createdAt)} · last used ${when(p.lastUsedAt)}`));
    li.append(
      what,
      button("Rename", "secondary", async () => {
        await api("PATCH", `/auth/passkeys/${p.id}`, { name: input.value.trim() });
        showStatus("The passkey was renamed.");
        await loadPasskeys();
      }),
      button("Remove", "danger", async () => {
        await api("DELETE", `/auth/passkeys/${p.id}`);
        showStatus(`The passkey “${p.name}” was removed.`);
        await loadPasskeys();
      }),
    );
    return li;
  });
  if (rows.length === 0) rows.push(element("li", "No passkeys yet."));
  $("passkey-list").replaceChildren(...rows);
}

if ($("passkey-form")) {
  if (typeof window.PublicKeyCredential === "undefined") {
    $("passkey-form").hidden = true;
  }
  onSubmit(
    $("passkey-form"),
    async () => {
      const passkey = await gatehouse.registerPasskey(
        $("passkey-password").value,
        $("passkey-name").value.trim() || undefined,
      );
      $("passkey-form").reset();
      showStatus(`The passkey “${passkey.name}” was added.`);
      await loadPasskeys();
    },
    { password: "passkey-password", name: "passkey-name" },
  );
}

// ---- sessions ----

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
          showStatus("That session was signed out.");
          await loadSessions();
        }),
      );
      return li;
    }),
  );
}

onClick($("sign-out-everywhere"), async () => {
  await gatehouse.logout("all").catch(() => {});
  toSignIn();
});

// ---- deletion ----

onSubmit(
  $("delete-form"),
  async () => {
    const body = { password: $("delete-password").value };
    if (me.twoFactorEnabled) body.code = $("delete-code").value.trim();
    await api("DELETE", "/auth/me", body);
    deleted = true;
    // The session died with the account: forget its tokens (the call itself fails, and that is fine).
    await gatehouse.logout("current").catch(() => {});
    $("account").replaceChildren(element("p", "Your account was deleted."));
    showStatus("Your account was deleted.");
    focus($("title"));
  },
  { password: "delete-password", code: "delete-code" },
);

// ---- start ----

async function start() {
  try {
    await loadProfile();
    $("account").hidden = false;
    await Promise.all([loadSessions(), loadPasskeys()]);
  } catch (error) {
    failed(error);
  }
}

if (gatehouse.signedIn) start();
