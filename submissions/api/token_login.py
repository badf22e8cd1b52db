"""A browser session from an API token, for the browsable API's forms (the run upload form):
users made with ``create_api_token`` have no password. Staff sign in with their password."""

from django import forms
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_http_methods

from submissions.services.tokens import find_active_token

BACKEND = "django.contrib.auth.backends.ModelBackend"


class TokenLoginForm(forms.Form):
    token = forms.CharField(strip=True, max_length=200, widget=forms.PasswordInput)

    def clean_token(self) -> str:
        token = find_active_token(self.cleaned_data["token"])
        if token is None or not token.user.is_active:
            raise forms.ValidationError("Invalid, expired or revoked token.")
        # A leaked token must never open the admin: staff use their password.
        if token.user.is_staff:
            raise forms.ValidationError("Staff sign in with their password, not a token.")
        self.user = token.user
        return self.cleaned_data["token"]


@require_http_methods(["GET", "POST"])
@csrf_protect
def token_login(request):
    form = TokenLoginForm(request.POST or None)
    target = _next(request)
    if form.is_valid():
        login(request, form.user, backend=BACKEND)
        return redirect(target)
    return render(request, "rest_framework/token_login.html", {"form": form, "next": target})


def _next(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if safe else reverse("api:run-list")
