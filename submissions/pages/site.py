"""Site-wide pages for people (how to submit, how scoring works) and odds and ends."""

from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_GET


@require_GET
def favicon(request):
    """Pages that do not link the icon (the admin, the API docs) make browsers ask for this."""
    return redirect(static("favicon.svg"))


@require_GET
def submit(request):
    return render(request, "submissions/site/submit.html")


@require_GET
def scoring(request):
    return render(request, "submissions/site/scoring.html")
