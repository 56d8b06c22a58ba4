// Auth.js (@auth/express) signing people in with Gatehouse as a generic OpenID provider, with
// the settings its documentation gives for one (docs/guide/compatibility.md): discovery, PKCE
// (Auth.js's default check) and the ID token. Run by tests/api/relying_parties/node.rs, which
// drives it as a browser would: the sign-in form's CSRF token, then the provider.
//
// Environment: GATEHOUSE_URL (the issuer), RP_PORT, RP_CLIENT_ID, RP_CLIENT_SECRET.
import { ExpressAuth, getSession } from "@auth/express";
import express from "express";
import { env } from "./relying.mjs";

const PORT = Number(env("RP_PORT"));
const config = {
  secret: crypto.randomUUID(),
  trustHost: true,
  providers: [
    {
      id: "gatehouse",
      name: "Gatehouse",
      type: "oidc",
      issuer: env("GATEHOUSE_URL"),
      clientId: env("RP_CLIENT_ID"),
      clientSecret: env("RP_CLIENT_SECRET"),
    },
  ],
};

const app = express();
app.set("trust proxy", true);
app.use("/auth", ExpressAuth(config));
app.get("/", async (req, res) => {
  const session = await getSession(req, config);
  res.send(session?.user ? `Signed in as ${session.user.email}` : "Not signed in");
});
app.listen(PORT, "127.0.0.1", () => console.log(`authjs-rp listening on ${PORT}`));
