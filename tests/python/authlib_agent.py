"""Authlib's OAuth 2.0 client (requests integration) as a command-line tool and as an agent
(docs/api.md §11), run by tests/api/relying_parties/libraries.rs against a served Gatehouse.

The tool signs the person in by the device authorization grant (RFC 8628): the codes from the
endpoint discovery names; a poll before the person answers is authlib's OAuthError
`authorization_pending`; the person allows it through the device page's own call; the next poll
(authlib's `fetch_token` with the device grant) gets the tokens. The agent, a confidential client,
then exchanges the tool's access token (RFC 8693) for one naming it as actor, narrower, and calls
the business API with it.

Environment: GATEHOUSE_URL, GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD, TOOL_ID (a public client with
the device grant), AGENT_ID and AGENT_SECRET (a confidential client with the exchange grant).
"""

import base64
import json
import os
import sys

import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session

BASE = os.environ["GATEHOUSE_URL"]
DEVICE = "urn:ietf:params:oauth:grant-type:device_code"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS = "urn:ietf:params:oauth:token-type:access_token"


def claims(jwt):
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def check(condition, message):
    if not condition:
        sys.exit(f"FAILED: {message}")


meta = requests.get(f"{BASE}/.well-known/openid-configuration", timeout=10).json()
check(DEVICE in meta["grant_types_supported"] and EXCHANGE in meta["grant_types_supported"], "grants")

# The tool: a public client, no secret.
tool = OAuth2Session(
    client_id=os.environ["TOOL_ID"],
    scope="openid contacts:read offline_access",
    token_endpoint_auth_method="none",
)
started = tool.post(
    meta["device_authorization_endpoint"],
    data={"client_id": os.environ["TOOL_ID"], "scope": "openid contacts:read offline_access"},
    withhold_token=True,
).json()
check(started["interval"] == 5 and "-" in started["user_code"], f"codes {started}")
try:
    tool.fetch_token(meta["token_endpoint"], grant_type=DEVICE, device_code=started["device_code"])
    check(False, "a poll before the answer got tokens")
except OAuthError as error:
    check(error.error == "authorization_pending", f"pending: {error.error}")
print("authlib device: pending", flush=True)

person = requests.post(
    f"{BASE}/api/v1/auth/login",
    json={"email": os.environ["GATEHOUSE_EMAIL"], "password": os.environ["GATEHOUSE_PASSWORD"]},
    timeout=10,
).json()["data"]["accessToken"]
answered = requests.post(
    f"{BASE}/api/v1/oauth2/device",
    json={"userCode": started["user_code"], "consent": True},
    headers={"Authorization": f"Bearer {person}"},
    timeout=10,
).json()
check(answered["data"]["status"] == "approved", f"approved: {answered}")

token = tool.fetch_token(meta["token_endpoint"], grant_type=DEVICE, device_code=started["device_code"])
check(token["token_type"].lower() == "bearer" and token.get("refresh_token"), f"tokens {token}")
print("authlib device: tokens", flush=True)

# The agent exchanges the tool's token for a narrower one that names it.
agent = OAuth2Session(
    client_id=os.environ["AGENT_ID"],
    client_secret=os.environ["AGENT_SECRET"],
    token_endpoint_auth_method="client_secret_basic",
)
exchanged = agent.fetch_token(
    meta["token_endpoint"],
    grant_type=EXCHANGE,
    subject_token=token["access_token"],
    subject_token_type=ACCESS,
    scope="contacts:read",
)
check(exchanged["issued_token_type"] == ACCESS, f"exchanged {exchanged}")
acting = claims(exchanged["access_token"])
check(acting["act"] == {"sub": os.environ["AGENT_ID"]}, f"act {acting}")
check(acting["sub"] == claims(token["access_token"])["sub"], "the person's token")
check(acting["scope"] == "contacts:read", f"scope {acting['scope']}")
listed = requests.get(
    f"{BASE}/api/v1/crm/contacts",
    headers={"Authorization": f"Bearer {exchanged['access_token']}"},
    timeout=10,
)
check(listed.status_code == 200, f"contacts {listed.status_code} {listed.text}")
try:
    agent.fetch_token(
        meta["token_endpoint"],
        grant_type=EXCHANGE,
        subject_token=token["access_token"],
        subject_token_type=ACCESS,
        scope="contacts:write",
    )
    check(False, "a wider scope was given")
except OAuthError as error:
    check(error.error == "invalid_scope", f"wider: {error.error}")
print("authlib agent: ok", flush=True)
