"""Accounts the platform itself submits runs as: verified campaigns (services.campaigns) and
imported publications (services.imports)."""

from django.contrib.auth import get_user_model


def service_account(username: str):
    """The account, created on first use: staff, because the upload quota is for people, and
    without a usable password, so nobody logs in as it."""
    user, created = get_user_model().objects.get_or_create(
        username=username, defaults={"is_staff": True}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user
