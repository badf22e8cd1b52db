"""Per-token request quotas (DRF throttling); rates come from settings, read per request."""

import logging

from django.conf import settings
from django.core.cache import caches
from redis.exceptions import RedisError
from rest_framework.throttling import SimpleRateThrottle

logger = logging.getLogger(__name__)


class _TokenRateThrottle(SimpleRateThrottle):
    """Counts requests per API token (per user for a browser session) in the "quotas" cache.

    The token's public prefix is the key: one user's tokens each get their own budget, and the
    key never repeats, even where database ids do. A cache that cannot be reached lets requests
    through: an upload survives a Redis restart, so its quota must not fail it.
    """

    setting = ""

    def __init__(self) -> None:
        self.cache = caches["quotas"]
        super().__init__()

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting)

    def get_cache_key(self, request, view) -> str | None:
        if not request.user.is_authenticated:
            return None
        prefix = getattr(request.auth, "prefix", None)
        ident = f"token:{prefix}" if prefix else f"user:{request.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except (OSError, RedisError) as error:
            logger.warning("%s quota not checked, its cache is unreachable: %s", self.scope, error)
            return True


class UploadThrottle(_TokenRateThrottle):
    scope = "uploads"
    setting = "ARENA_UPLOAD_RATE"


class ReevaluateThrottle(_TokenRateThrottle):
    scope = "reevaluations"
    setting = "ARENA_REEVALUATE_RATE"


class LoginThrottle(SimpleRateThrottle):
    """Sign-in attempts (POSTs to the admin's login) per client address, in the "quotas"
    cache; an unreachable cache lets them through, as for the other quotas."""

    scope = "logins"

    def __init__(self) -> None:
        self.cache = caches["quotas"]
        super().__init__()

    def get_rate(self) -> str | None:
        return settings.ARENA_LOGIN_RATE

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except (OSError, RedisError) as error:
            logger.warning("login quota not checked, its cache is unreachable: %s", error)
            return True
