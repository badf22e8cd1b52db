from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("submissions.api.urls")),
    path("api/v1/auth/", include("rest_framework.urls")),
    path("", include("submissions.urls")),
]
