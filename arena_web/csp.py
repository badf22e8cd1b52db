"""A Content-Security-Policy header on every response that does not carry its own."""

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.ARENA_CSP and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.ARENA_CSP
        return response
