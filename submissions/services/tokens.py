"""Issuing, revoking and finding API tokens.

A token reads ``ka_<prefix>_<secret>``. Only the SHA-256 digest of the whole token is stored; the
prefix finds the row, a constant-time comparison of digests decides. Tokens carry 256 random bits,
so a fast digest is enough: there is nothing to brute-force.
"""

import datetime
import hashlib
import hmac
import secrets

from django.utils import timezone

from submissions.models import ApiToken

SCHEME_MARK = "ka"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue_token(
    *, user, name: str = "", expires_at: datetime.datetime | None = None
) -> tuple[ApiToken, str]:
    """Create a token for ``user``; returns the row and the plaintext, which is not kept."""
    prefix = secrets.token_hex(6)
    plaintext = f"{SCHEME_MARK}_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user, name=name, prefix=prefix, digest=token_digest(plaintext), expires_at=expires_at
    )
    return token, plaintext


def revoke_token(*, token: ApiToken) -> None:
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])


def edit_token(*, token: ApiToken, name: str, expires_at: datetime.datetime | None) -> None:
    """What a maintainer may change of a token: its label (the host or agent it was issued
    for) and its expiry."""
    token.name, token.expires_at = name, expires_at
    token.save(update_fields=["name", "expires_at"])


def delete_tokens(*, tokens) -> None:
    """Tokens a maintainer deletes (revoking keeps the row: who held it and until when)."""
    for token in tokens:
        token.delete()


def note_use(*, token: ApiToken) -> None:
    """When the token last authenticated a request (shown to its owner and in the admin)."""
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())


def find_active_token(plaintext: str) -> ApiToken | None:
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != SCHEME_MARK:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=parts[1]).first()
    if token is None or not hmac.compare_digest(token.digest, token_digest(plaintext)):
        return None
    now = timezone.now()
    if token.revoked_at or (token.expires_at and token.expires_at <= now):
        return None
    return token
