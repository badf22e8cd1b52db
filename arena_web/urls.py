from django.contrib import admin
from django.urls import include, path

from arena_web import admin_login

urlpatterns = [
    path("admin/login/", admin_login.login, name="admin-login"),  # throttled sign-in
    path("admin/", admin.site.urls),
    path("api/v1/", include("submissions.api.urls")),
    path("api/v1/auth/", include("rest_framework.urls")),
    path("", include("submissions.urls")),
]
