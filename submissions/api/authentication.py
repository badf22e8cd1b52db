"""``Authorization: Token <token>`` (or ``Bearer``) for the API; tokens are in services.tokens."""

from rest_framework import authentication, exceptions

from submissions.services.tokens import find_active_token, note_use

KEYWORDS = (b"token", b"bearer")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <token>`` (or ``Bearer``)."""

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        token = find_active_token(parts[1].decode("latin-1"))
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        note_use(token=token)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return "Token"
