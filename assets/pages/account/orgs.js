// Organisations (docs/api.md §13): the person's organisations with a switcher (the session's
// active organisation, no new login), leaving, creating one; for owners and admins, the members
// and the pending invitations of the one they manage.
import { $, gatehouse, showStatus, when } from "/assets/pages/ui.js";
import { action, button, clicked, element, me, section } from "/assets/pages/account.js";

/** The organisation whose members are shown, or null. */
let managed = null;

async function loadOrgs() {
  const items = await gatehouse.listOrgs();
  const active = gatehouse.currentOrg?.id ?? null;
  const activeOrg = items.find((i) => i.org.id === active);
  $("org-active").textContent = activeOrg
    ? `You are working in ${activeOrg.org.name}.`
    : items.length ? "You are working in no organisation." : "You belong to no organisation.";
  $("org-none").hidden = !activeOrg;
  $("org-list").replaceChildren(
    ...items.map(({ org, roles }) => {
      const li = element("li");
      li.dataset.org = org.id;
      const what = element("div", undefined, "what");
      const name = org.id === active ? `${org.name} (active)` : org.name;
      what.append(element("span", name), element("small", `${org.slug} · ${roles.join(", ")}`));
      li.append(what);
      if (org.id !== active) {
        li.append(
          button("Work in this one", "secondary", async () => {
            await gatehouse.switchOrg(org.id);
            showStatus(`You are now working in ${org.name}.`, $("org-list"));
            await loadOrgs();
          }),
        );
      }
      if (roles.includes("owner") || roles.includes("admin")) {
        li.append(button("Members", "secondary", () => manage(org)));
      }
      li.append(
        button("Leave", "secondary", async () => {
          await gatehouse.removeOrgMember(org.id, me().id);
          if (org.id === active) await gatehouse.switchOrg(null).catch(() => {});
          if (managed?.id === org.id) hideManaged();
          showStatus(`You left ${org.name}.`, $("org-list"));
          await loadOrgs();
        }),
      );
      return li;
    }),
  );
  if (managed && !items.some((i) => i.org.id === managed.id)) hideManaged();
}

function hideManaged() {
  managed = null;
  $("org-manage").hidden = true;
}

async function manage(org) {
  managed = org;
  $("org-manage-title").textContent = `Members of ${org.name}`;
  $("org-manage").hidden = false;
  await loadManaged();
}

async function loadManaged() {
  if (!managed) return;
  const org = managed;
  const members = [];
  let cursor;
  do {
    const page = await gatehouse.listOrgMembers(org.id, { limit: 200, cursor });
    members.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  $("org-members").replaceChildren(
    ...members.map((m) => {
      const li = element("li");
      const what = element("div", undefined, "what");
      what.append(element("span", `${m.fullName} <${m.email}>`), element("small", m.roles.join(", ")));
      li.append(what);
      if (m.userId !== me().id) {
        li.append(
          button("Remove", "secondary", async () => {
            await gatehouse.removeOrgMember(org.id, m.userId);
            showStatus(`${m.email} was removed.`, $("org-members"));
            await loadManaged();
          }),
        );
      }
      return li;
    }),
  );
  const invitations = await gatehouse.listOrgInvitations(org.id);
  $("org-invitations").replaceChildren(
    ...invitations.map((i) => {
      const li = element("li");
      const what = element("div", undefined, "what");
      what.append(element("span", `Invited: ${i.email}`), element("small", `${i.roles.join(", ")} · until ${when(i.expiresAt)}`));
      li.append(
        what,
        button("Withdraw", "secondary", async () => {
          await gatehouse.deleteOrgInvitation(org.id, i.id);
          showStatus(`The invitation to ${i.email} was withdrawn.`, $("org-invitations"));
          await loadManaged();
        }),
      );
      return li;
    }),
  );
}

section({ id: "orgs", load: loadOrgs });

clicked($("org-none"), async () => {
  await gatehouse.switchOrg(null);
  showStatus("You are working in no organisation.", $("org-list"));
  await loadOrgs();
});

action(
  $("org-invite-form"),
  async () => {
    const email = $("org-invite-email").value.trim();
    await gatehouse.inviteToOrg(managed.id, email, [$("org-invite-role").value]);
    $("org-invite-email").value = "";
    await loadManaged();
    showStatus(`An invitation is on its way to ${email}.`, $("org-invite-form"));
  },
  { email: "org-invite-email", roles: "org-invite-role" },
);

action(
  $("org-create-form"),
  async () => {
    const org = await gatehouse.createOrg($("org-name").value, $("org-slug").value.trim());
    $("org-name").value = "";
    $("org-slug").value = "";
    await loadOrgs();
    showStatus(`${org.name} was created; you are its owner.`, $("org-create-form"));
  },
  { name: "org-name", slug: "org-slug" },
);
