from django.urls import path

from submissions import transcript_views, views

app_name = "submissions"

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/transcript/", transcript_views.transcript, name="run-transcript"),
    path(
        "runs/<uuid:run_id>/transcript.html",
        transcript_views.transcript_download,
        name="run-transcript-download",
    ),
]
