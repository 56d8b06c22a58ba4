"""Authlib's Flask client signing people in with Gatehouse, as its documentation sets it up
(docs/guide/compatibility.md): discovery, the code flow with a nonce (Authlib's own) and, with
GATEHOUSE_PKCE=1, PKCE; the ID token checked against the JWK Set; userinfo. Run by
tests/api/relying_parties/python.rs, which drives it as a browser would.

Environment: GATEHOUSE_URL (the issuer), RP_PORT, RP_CLIENT_ID, RP_CLIENT_SECRET, GATEHOUSE_PKCE.
"""

import os

from authlib.integrations.flask_client import OAuth, OAuthError
from flask import Flask, redirect, session, url_for

app = Flask(__name__)
app.secret_key = os.urandom(32)

client_kwargs = {"scope": "openid email profile"}
# Authlib sends a nonce with every OpenID request, but PKCE only when asked for.
if os.environ.get("GATEHOUSE_PKCE") == "1":
    client_kwargs["code_challenge_method"] = "S256"

oauth = OAuth(app)
oauth.register(
    name="gatehouse",
    client_id=os.environ["RP_CLIENT_ID"],
    client_secret=os.environ["RP_CLIENT_SECRET"],
    server_metadata_url=os.environ["GATEHOUSE_URL"] + "/.well-known/openid-configuration",
    client_kwargs=client_kwargs,
)


@app.route("/")
def home():
    user = session.get("user")
    return f"Signed in as {user['email']}" if user else "Not signed in"


@app.route("/login")
def login():
    return oauth.gatehouse.authorize_redirect(url_for("callback", _external=True))


@app.route("/callback")
def callback():
    try:
        token = oauth.gatehouse.authorize_access_token()
    except OAuthError as e:
        return f"Sign-in failed: {e.error}: {e.description}", 400
    info = oauth.gatehouse.userinfo(token=token)
    assert info["sub"] == token["userinfo"]["sub"]
    session["user"] = {"email": info["email"], "sub": info["sub"]}
    return redirect("/")


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ["RP_PORT"]))
