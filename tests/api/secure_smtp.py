# An SMTP server with TLS and authentication for the mail tests (tests/api/smtp_tls.rs): aiosmtpd's
# command line has TLS options but no way to require a login, so its Controller is driven here.
#
#   secure_smtp.py starttls|smtps PORT CERT KEY USER PASSWORD MAILDIR AUTH_LOG
#
# Mail is accepted only after a successful AUTH, which needs TLS first (STARTTLS required, or
# TLS from the first byte). Every AUTH attempt is appended to AUTH_LOG as "<login> ok|refused".

import hmac
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword

mode, port, cert, key, user, password, maildir, auth_log = sys.argv[1:]

context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
context.load_cert_chain(cert, key)


def authenticator(server, session, envelope, mechanism, auth_data):
    if not isinstance(auth_data, LoginPassword):
        return AuthResult(success=False, handled=False)
    ok = hmac.compare_digest(auth_data.login, user.encode()) and hmac.compare_digest(
        auth_data.password, password.encode()
    )
    with open(auth_log, "a") as log:
        login = auth_data.login.decode(errors="replace")
        log.write(f"{login} {'ok' if ok else 'refused'}\n")
    return AuthResult(success=ok, handled=False)


options = dict(
    hostname="127.0.0.1",
    port=int(port),
    authenticator=authenticator,
    auth_required=True,
)
if mode == "starttls":
    options.update(tls_context=context, require_starttls=True, auth_require_tls=True)
elif mode == "smtps":
    # The whole connection is TLS, which aiosmtpd's AUTH check does not see (it knows only of
    # STARTTLS): without this it would never offer AUTH.
    options.update(ssl_context=context, auth_require_tls=False)
else:
    sys.exit(f"unknown mode {mode}")

controller = Controller(Mailbox(maildir), **options)
controller.start()
threading.Event().wait()
