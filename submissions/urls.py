from django.urls import path

from submissions.pages import board, charts, configs, problems, runs, site, transcripts

app_name = "submissions"

urlpatterns = [
    path("", board.home, name="home"),
    path("boards/<slug:hardware>/", board.board, name="board"),
    path("boards/<slug:hardware>/matrix/", board.matrix, name="matrix"),
    path("boards/<slug:hardware>/charts/", charts.charts, name="charts"),
    path("matrix/", board.default_matrix, name="matrix-default"),
    path("charts/", charts.default_charts, name="charts-default"),
    path("problems/", problems.problem_index, name="problem-index"),
    path("problems/<slug:slug>/", problems.problem_detail, name="problem-detail"),
    path("models/", configs.model_index, name="model-index"),
    path("models/<slug:slug>/", configs.model_detail, name="model-detail"),
    path("harnesses/", configs.harness_index, name="harness-index"),
    path("harnesses/<slug:slug>/", configs.harness_detail, name="harness-detail"),
    path("runs/", runs.run_index, name="run-index"),
    path("runs/<uuid:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/transcript/", transcripts.transcript, name="run-transcript"),
    path(
        "runs/<uuid:run_id>/transcript.html",
        transcripts.transcript_download,
        name="run-transcript-download",
    ),
    path("submit/", site.submit, name="submit"),
    path("scoring/", site.scoring, name="scoring"),
    # Pages that do not link the icon (the admin, the API docs) make browsers ask for this.
    path("favicon.ico", site.favicon, name="favicon"),
]
