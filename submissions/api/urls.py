from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from submissions.api import audit, boards, views
from submissions.api.lineage import GradeLineageView
from submissions.api.reevaluate import ReevaluateView
from submissions.api.token_login import token_login

app_name = "api"

router = DefaultRouter()
router.register("runs", views.RunViewSet, basename="run")
router.register("problems", views.ProblemViewSet, basename="problem")
router.register("models", views.LanguageModelViewSet, basename="model")
router.register("harnesses", views.HarnessViewSet, basename="harness")
router.register("hardware", views.HardwareTargetViewSet, basename="hardware")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    # staff: integrity (services.audit)
    path("runs/<uuid:run_id>/annotations/", audit.AnnotateView.as_view(), name="run-annotate"),
    path("runs/<uuid:run_id>/invalidate/", audit.InvalidateView.as_view(), name="run-invalidate"),
    path("runs/<uuid:run_id>/restore/", audit.RestoreView.as_view(), name="run-restore"),
    path("review-queue/", audit.ReviewQueueView.as_view(), name="review-queue"),
    # a browser session from an API token, for the browsable API's forms
    path("auth/token-login/", token_login, name="token-login"),
    # staff re-grading (services.evaluations)
    path("runs/<uuid:run_id>/reevaluate/", ReevaluateView.as_view(), name="run-reevaluate"),
    path("runs/<uuid:run_id>/lineage/grade/", GradeLineageView.as_view(), name="run-grade-lineage"),
    # boards: read API and exports (issue 10, submissions.boards)
    path("boards/<slug:hardware>/", boards.BoardView.as_view(), name="board"),
    path("boards/<slug:hardware>/matrix/", boards.MatrixView.as_view(), name="board-matrix"),
    path(
        "boards/<slug:hardware>/problems/<slug:problem>/",
        boards.ProblemRunsView.as_view(),
        name="board-problem",
    ),
    *router.urls,
]
