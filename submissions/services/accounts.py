"""Accounts: those the platform itself submits runs as (verified campaigns, services.campaigns;
imported publications, services.imports), and people given an API token from the command line."""

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


def token_holder(username: str):
    """The account a token is issued to, created without a usable password where it is new (it
    uploads with the token; a maintainer sets a password to let it log in). Returns the account
    and whether it was created."""
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user, created
