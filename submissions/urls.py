from django.urls import path

from submissions import views

app_name = "submissions"

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
]
