"""The admin's sign-in, with a per-address limit on attempts (429 with Retry-After past it)."""

import math

from django.contrib import admin
from django.http import HttpResponse

from submissions.api.throttles import LoginThrottle


def login(request, **kwargs):
    if request.method == "POST":
        throttle = LoginThrottle()
        if not throttle.allow_request(request, None):
            wait_s = math.ceil(throttle.wait() or 1)
            response = HttpResponse(
                f"Too many sign-in attempts from this address; try again in {wait_s} s.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
            response["Retry-After"] = str(wait_s)
            return response
    return admin.site.login(request, **kwargs)
