// passport-openidconnect 0.1.2 (the usual Express/Passport strategy) signing people in with
// Gatehouse, set up as its README sets it up (docs/guide/compatibility.md), plus `nonce: true`:
// without PKCE, which it cannot send, Gatehouse asks for a nonce (RFC 9700 §2.1.1). It reads no
// discovery document and checks no signature (it takes the ID token from the token endpoint).
// Run by tests/api/relying_parties/node.rs, which drives it as a browser would.
//
// Environment: GATEHOUSE_URL (the issuer), RP_PORT, RP_CLIENT_ID, RP_CLIENT_SECRET, RP_NONCE
// ("0" leaves the nonce out, to show what Gatehouse says then).
import express from "express";
import session from "express-session";
import passport from "passport";
import OpenIDConnectStrategy from "passport-openidconnect";
import { env } from "./relying.mjs";

const ISSUER = env("GATEHOUSE_URL");
const PORT = Number(env("RP_PORT"));

passport.use(
  new OpenIDConnectStrategy(
    {
      issuer: ISSUER,
      authorizationURL: `${ISSUER}/oauth2/authorize`,
      tokenURL: `${ISSUER}/oauth2/token`,
      userInfoURL: `${ISSUER}/oauth2/userinfo`,
      clientID: env("RP_CLIENT_ID"),
      clientSecret: env("RP_CLIENT_SECRET"),
      callbackURL: `http://127.0.0.1:${PORT}/callback`,
      scope: ["email", "profile"],
      nonce: process.env.RP_NONCE !== "0",
    },
    (issuer, profile, cb) => cb(null, { id: profile.id, email: profile.emails?.[0]?.value }),
  ),
);
passport.serializeUser((user, cb) => cb(null, user));
passport.deserializeUser((user, cb) => cb(null, user));

const app = express();
app.use(session({ secret: crypto.randomUUID(), resave: false, saveUninitialized: false }));
app.use(passport.authenticate("session"));
app.get("/", (req, res) => res.send(req.user ? `Signed in as ${req.user.email}` : "Not signed in"));
app.get("/login", passport.authenticate("openidconnect"));
app.get("/callback", passport.authenticate("openidconnect", { failureRedirect: "/", failureMessage: true }), (req, res) =>
  res.redirect("/"),
);
// What an application shows when the provider refuses: the strategy's error, which carries
// Gatehouse's error_description.
app.use((err, req, res, _next) => res.status(400).send(`Sign-in failed: ${err.code ?? ""}: ${err.message}`));
app.listen(PORT, "127.0.0.1", () => console.log(`passport-rp listening on ${PORT}`));
