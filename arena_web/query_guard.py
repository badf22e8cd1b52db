"""Requests whose query string holds a NUL character answer 400 before any view reads it.

PostgreSQL refuses NUL in text, so a parameter carried into a query (``?hardware=%00``) would
otherwise surface as a server error; no page or API parameter has a use for one.
"""

from django.http import HttpResponseBadRequest


class RejectNulQueryMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if any("\x00" in key or "\x00" in value for key, value in _pairs(request.GET)):
            return HttpResponseBadRequest(
                "A query parameter holds a NUL character (%00), which no parameter accepts.",
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)


def _pairs(query):
    for key, values in query.lists():
        for value in values:
            yield key, value
