"""mozilla-django-oidc signing people in to a Django site with Gatehouse, with the settings its
documentation asks for and nothing more (docs/guide/compatibility.md); GATEHOUSE_PKCE=1 adds
OIDC_USE_PKCE. One file: Django's settings, the URLs, a page that says who is signed in, and a
WSGI server from the standard library. Run by tests/api/relying_parties/python.rs, which drives
it as a browser would.

Environment: GATEHOUSE_URL (the issuer), RP_PORT, RP_CLIENT_ID, RP_CLIENT_SECRET, RP_DATA (a
folder for its database), GATEHOUSE_PKCE.
"""

import os
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server

import django
from django.conf import settings
from django.http import HttpResponse
from django.urls import include, path

ISSUER = os.environ["GATEHOUSE_URL"]

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["127.0.0.1"],
    SECRET_KEY=os.urandom(32).hex(),
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "mozilla_django_oidc",
    ],
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
    ],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.path.join(os.environ["RP_DATA"], "site.sqlite3"),
        }
    },
    AUTHENTICATION_BACKENDS=["mozilla_django_oidc.auth.OIDCAuthenticationBackend"],
    LOGIN_REDIRECT_URL="/",
    LOGOUT_REDIRECT_URL="/",
    # What mozilla-django-oidc needs of any provider: it reads no discovery document.
    OIDC_RP_CLIENT_ID=os.environ["RP_CLIENT_ID"],
    OIDC_RP_CLIENT_SECRET=os.environ["RP_CLIENT_SECRET"],
    OIDC_OP_AUTHORIZATION_ENDPOINT=ISSUER + "/oauth2/authorize",
    OIDC_OP_TOKEN_ENDPOINT=ISSUER + "/oauth2/token",
    OIDC_OP_USER_ENDPOINT=ISSUER + "/oauth2/userinfo",
    # Its default, HS256, would check the ID token with the client secret; Gatehouse signs with
    # its keys, published at the JWK Set.
    OIDC_RP_SIGN_ALGO="RS256",
    OIDC_OP_JWKS_ENDPOINT=ISSUER + "/.well-known/jwks.json",
    OIDC_USE_PKCE=os.environ.get("GATEHOUSE_PKCE") == "1",
)
django.setup()


def home(request):
    if request.user.is_authenticated:
        return HttpResponse(f"Signed in as {request.user.email}")
    return HttpResponse("Not signed in")


urlpatterns = [
    path("", home),
    path("oidc/", include("mozilla_django_oidc.urls")),
]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        sys.stderr.write("django_rp: " + (format % args) + "\n")


if __name__ == "__main__":
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    call_command("migrate", verbosity=0)
    server = make_server("127.0.0.1", int(os.environ["RP_PORT"]), get_wsgi_application(),
                         handler_class=QuietHandler)
    server.serve_forever()
