// Security: the password, two-factor authentication (enrolment, recovery codes, turning it off)
// and passkeys.
import { $, focus, gatehouse, showError, showStatus, when } from "/assets/pages/ui.js";
import { action, api, button, confirmed, element, refresh, reload, section } from "/assets/pages/account.js";

// ---- password ----

action(
  $("password-form"),
  async () => {
    const form = $("password-form");
    const newPassword = $("new-password").value;
    await confirmed(() => api("POST", "/auth/password", { newPassword }));
    form.reset();
    showStatus("Your password was changed. Your other sessions were signed out.", form);
    // The other sessions ended: every list is read again.
    await refresh();
  },
  { newPassword: "new-password" },
);

// ---- two-factor authentication ----

function showTwoFactor(account) {
  const on = account.twoFactorEnabled;
  $("twofa-state").textContent = on
    ? `On. Recovery codes left: ${account.recoveryCodesRemaining}.`
    : "Off. Turn it on to ask for a code from your phone after your password.";
  $("twofa-setup-form").hidden = on || !$("twofa-enable-form").hidden;
  $("twofa-codes-form").hidden = !on;
  $("twofa-disable-form").hidden = !on;
  if (on) $("twofa-enable-form").hidden = true;
}

/** `ABCDEFGHIJKLMNOP` → `ABCD EFGH IJKL MNOP`: easier to type into an app by hand. */
const grouped = (key) => key.replace(/(.{4})(?=.)/g, "$1 ");

async function copy(text, what, where) {
  try {
    await navigator.clipboard.writeText(text);
    showStatus(`${what} copied.`, where);
  } catch {
    showError(new Error(`${what} could not be copied: select and copy them by hand.`), {}, where);
  }
}

let downloadUrl = null;

function showRecoveryCodes(codes) {
  $("recovery-list").replaceChildren(...codes.map((c) => element("li", c)));
  const text = `Gatehouse recovery codes for ${location.host}\nEach works once.\n\n${codes.join("\n")}\n`;
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  $("download-codes").href = downloadUrl;
  $("copy-codes").onclick = () => copy(codes.join("\n"), "The codes were", $("recovery-list"));
  $("recovery-codes").hidden = false;
  focus($("recovery-title"));
}

// The codes leave the page once their owner says they are kept.
$("codes-saved").addEventListener("click", () => {
  $("recovery-list").replaceChildren();
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = null;
  $("recovery-codes").hidden = true;
  focus($("twofa-title"));
});

action(
  $("twofa-setup-form"),
  async () => {
    const setup = await confirmed(() => api("POST", "/auth/2fa/setup", {}));
    // An SVG in an <img> runs no script; data: images are allowed by the page's CSP.
    $("qr").src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(setup.qrCodeSvg)}`;
    $("secret").textContent = grouped(setup.secret);
    $("otpauth").href = setup.otpauthUri;
    $("copy-secret").onclick = () => copy(setup.secret, "The key was", $("secret"));
    $("twofa-setup-form").hidden = true;
    $("twofa-enable-form").hidden = false;
    focus($("enable-code"));
  },
);

action(
  $("twofa-enable-form"),
  async () => {
    const { recoveryCodes } = await api("POST", "/auth/2fa/enable", {
      code: $("enable-code").value.trim(),
    });
    $("twofa-enable-form").reset();
    $("twofa-enable-form").hidden = true;
    $("qr").removeAttribute("src");
    $("secret").textContent = "";
    $("otpauth").href = "#";
    await reload();
    showStatus("Two-factor authentication is on.", $("twofa-state"));
    showRecoveryCodes(recoveryCodes);
  },
  { code: "enable-code" },
);

action(
  $("twofa-codes-form"),
  async () => {
    const { recoveryCodes } = await api("POST", "/auth/2fa/recovery-codes", {
      code: $("regen-code").value.trim(),
    });
    $("twofa-codes-form").reset();
    await reload();
    showStatus("New recovery codes: the old ones no longer work.", $("twofa-state"));
    showRecoveryCodes(recoveryCodes);
  },
  { code: "regen-code" },
);

action(
  $("twofa-disable-form"),
  async () => {
    const code = $("disable-code").value.trim();
    await confirmed(() => api("POST", "/auth/2fa/disable", { code }));
    $("twofa-disable-form").reset();
    $("recovery-codes").hidden = true;
    await reload();
    showStatus("Two-factor authentication is off.", $("twofa-state"));
    focus($("twofa-title"));
  },
  { code: "disable-code" },
);

// ---- passkeys ----

async function loadPasskeys() {
  if (!$("passkeys")) return;
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
        showStatus("The passkey was renamed.", $("passkey-list"));
        await loadPasskeys();
      }),
      button("Remove", "danger", async () => {
        await api("DELETE", `/auth/passkeys/${p.id}`);
        showStatus(`The passkey “${p.name}” was removed.`, $("passkey-list"));
        await loadPasskeys();
      }),
    );
    return li;
  });
  if (rows.length === 0) rows.push(element("li", "No passkeys yet."));
  $("passkey-list").replaceChildren(...rows);
}

if ($("passkey-form")) {
  if (typeof window.PublicKeyCredential === "undefined") $("passkey-form").hidden = true;
  action(
    $("passkey-form"),
    async () => {
      const form = $("passkey-form");
      const name = $("passkey-name").value.trim() || undefined;
      const passkey = await confirmed(() => gatehouse.registerPasskey(undefined, name));
      form.reset();
      showStatus(`The passkey “${passkey.name}” was added.`, form);
      await loadPasskeys();
    },
    { name: "passkey-name" },
  );
}

section({ id: "security", show: showTwoFactor, load: loadPasskeys });
