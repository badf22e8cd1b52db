"""Site-wide odds and ends."""

from django.shortcuts import redirect
from django.templatetags.static import static
from django.views.decorators.http import require_GET


@require_GET
def favicon(request):
    """Pages that do not link the icon (the admin, the API docs) make browsers ask for this."""
    return redirect(static("favicon.svg"))
