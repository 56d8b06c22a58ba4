// A typed application using every member of the library, as a team would after
// `npm install ./gatehouse-client-x.y.z.tgz`. It is never run: tests/api/browser.rs installs the
// packed library in a fresh folder and compiles this file there with `tsc --noEmit` (strict), so
// the declarations are checked as a consumer gets them (package.json `types` and `exports`).
// test/declarations.test.mjs checks that every member of the module appears here.

import {
  Gatehouse,
  GatehouseError,
  type ErrorCode,
  type GatehouseOptions,
  type LoginResult,
  type ActiveOrg,
  type Org,
  type OrgInvitation,
  type OrgMember,
  type ApiKey,
  type LinkedIdentity,
  type Provider,
  type NewApiKey,
  type Passkey,
  type Profile,
  type Session,
  type SessionChange,
  type StorageLike,
  type TokenSet,
  type TwoFactorSetup,
  type User,
} from "@gatehouse/client";

const memory = new Map<string, string>();
const storage: StorageLike = {
  getItem: (key) => memory.get(key) ?? null,
  setItem: (key, value) => void memory.set(key, value),
  removeItem: (key) => void memory.delete(key),
};

const options: GatehouseOptions = {
  baseUrl: "https://auth.example.com",
  storage,
  locks: navigator.locks,
  fetch: (input, init) => fetch(input, init),
  key: "gatehouse:example",
  refreshMarginSeconds: 30,
  apiOrigins: ["https://api.example.com"],
};
const gh = new Gatehouse(options);
const plain = new Gatehouse();

interface Order {
  id: number;
  total: number;
}

async function orders(): Promise<Order[]> {
  const response: Response = await gh.fetch("/api/orders", {
    headers: { Accept: "application/json" },
  });
  if (!response.ok) throw new Error(`orders: ${response.status}`);
  const more: Response = await gh.fetch(
    new Request("https://api.example.com/orders", { method: "POST" }),
  );
  await more.text();
  return (await response.json()) as Order[];
}

async function signIn(email: string, password: string, code: () => Promise<string>): Promise<User> {
  const result: LoginResult = await gh.login(email, password);
  if (result.twoFactorRequired) {
    if (gh.twoFactorPending) return gh.verifyTwoFactor(await code());
    return gh.verifyTwoFactorWithPasskey();
  }
  return result.user;
}

async function everythingElse(tokenSet: TokenSet): Promise<void> {
  const signedIn: boolean = plain.signedIn;
  const current: User | null = gh.user;
  const token: string = await gh.getAccessToken();
  const me: Profile = await gh.me();
  const contacts = await gh.request<{ items: { id: string }[] }>(
    "GET",
    "/crm/contacts",
    undefined,
    {
      auth: true,
      signal: AbortSignal.timeout(5_000),
    },
  );
  const registered: User = await gh.register("ada@example.com", "a long passphrase", "Ada");
  await gh.forgotPassword("ada@example.com");
  await gh.resetPassword("mailed-token", "another long passphrase");
  await gh.verifyEmail("mailed-token");
  await gh.resendVerificationEmail();
  await gh.changeEmail("ada@new.example.com", "a long passphrase");
  await gh.changePassword("a long passphrase", "another long passphrase");
  const setup: TwoFactorSetup = await gh.setupTwoFactor("a long passphrase");
  const codes: string[] = await gh.enableTwoFactor("123456");
  const fresh: string[] = await gh.regenerateRecoveryCodes(codes[0] ?? setup.secret);
  await gh.disableTwoFactor("a long passphrase", fresh[0] ?? "123456");
  const sessions: Session[] = await gh.listSessions();
  const other = sessions.find((s) => !s.current && s.userAgent !== null);
  if (other) await gh.deleteSession(other.id);
  const added: Passkey = await gh.registerPasskey("a long passphrase", "Laptop");
  const passkeys: Passkey[] = await gh.listPasskeys();
  const reauthenticatedUntil: string = await gh.reauthenticateWithPasskey();
  console.log(reauthenticatedUntil);
  const renamed: Passkey = await gh.renamePasskey(added.id, "Work laptop");
  await gh.deletePasskey(passkeys[0]?.id ?? renamed.id);
  const made: NewApiKey = await gh.createApiKey("Nightly export", "a long passphrase", {
    scopes: ["contacts:read"],
    expiresAt: new Date(Date.now() + 86_400_000),
  });
  const keys: ApiKey[] = await gh.listApiKeys();
  await gh.deleteApiKey(keys[0]?.id ?? made.id);
  const providers: Provider[] = await gh.listProviders();
  const start: string = gh.providerSignInUrl(providers[0]?.id ?? "acme-sso", "/account", "ada@acme.example");
  const finished: LoginResult = await gh.finishProviderSignIn();
  const identities: LinkedIdentity[] = await gh.listIdentities();
  const linkAt: string = await gh.linkIdentity("acme-sso", "a long passphrase");
  await gh.unlinkIdentity(identities[0]?.providerId ?? "acme-sso");
  const confirmAt: string = await gh.reauthenticateWithProvider("acme-sso");
  console.log(confirmAt, me.hasPassword);
  console.log(start, finished, linkAt);
  const viaPasskey: User = await gh.passkeyLogin();
  const invited: User = await gh.acceptInvitation("mailed-token", "a long passphrase");
  const used: User = gh.useTokenSet(tokenSet);
  const refreshed: User = await gh.refresh();
  const { revokedSessions }: { revokedSessions: number } = await gh.logout("others");
  await organisations();
  await gh.deleteAccount("a long passphrase", "123456");
  await gh.logout();
  console.log(signedIn, current, token, me.roles, contacts.items, registered, viaPasskey, invited);
  console.log(used, refreshed, revokedSessions);
}

async function organisations(): Promise<void> {
  const org: Org = await gh.createOrg("Acme", "acme");
  const mine: { org: Org; roles: string[] }[] = await gh.listOrgs();
  const one: Org & { roles: string[] } = await gh.getOrg(org.id);
  const active: ActiveOrg | null = await gh.switchOrg(org.id);
  const current: ActiveOrg | null = gh.currentOrg;
  await gh.updateOrg(org.id, { requireTwoFactor: true });
  const page: { items: OrgMember[]; nextCursor: string | null } = await gh.listOrgMembers(org.id, {
    limit: 20,
  });
  const roles: string[] = await gh.setOrgMemberRoles(org.id, page.items[0]?.userId ?? "", ["admin"]);
  const invitation: OrgInvitation = await gh.inviteToOrg(org.id, "grace@example.com", ["member"]);
  const pending: OrgInvitation[] = await gh.listOrgInvitations(org.id);
  await gh.deleteOrgInvitation(org.id, invitation.id);
  const joined: Org = await gh.acceptOrgInvitation("mailed-token");
  await gh.removeOrgMember(org.id, page.items[0]?.userId ?? "");
  await gh.switchOrg(null);
  await gh.deleteOrg(joined.id);
  const newcomer: User = await gh.acceptInvitation("mailed-token", "a long passphrase", "Grace");
  console.log(mine, one, active, current, roles, pending, newcomer);
}

const unsubscribe: () => void = gh.onChange((change: SessionChange) => {
  if (change.type === "signed-out" && !change.remote) location.assign("/sign-in");
});

function explain(error: unknown): string {
  if (!(error instanceof GatehouseError)) return "unexpected";
  const code: ErrorCode = error.code;
  if (code === "RATE_LIMITED") return `try again in ${error.details.retryAfter ?? 60} s`;
  if (code === "INVALID_2FA_CODE") return `${error.details.attemptsRemaining} attempts left`;
  if (code === "VALIDATION_ERROR") return Object.keys(error.details.fields ?? {}).join(", ");
  if (code === "ORIGIN_NOT_ALLOWED" || error.status === 0) return error.message;
  return `${error.name} ${error.status} ${code}`;
}

export { everythingElse, explain, orders, signIn, unsubscribe };
export const made = new GatehouseError("made here", {
  code: "NETWORK_ERROR",
  cause: new Error("x"),
});
