from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, pagination, permissions, status, viewsets
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response

from runners.contract import MAX_SIDECAR_BYTES
from submissions import selectors
from submissions.api import serializers
from submissions.api.throttles import UploadThrottle
from submissions.filters import RunFilter
from submissions.models import HardwareTarget, Harness, LanguageModel, Problem
from submissions.services.runs import create_run_from_upload
from submissions.uploads import IntakeError, UploadConflict

BODY_OVERHEAD = 1024 * 1024  # multipart boundaries and form fields
UPLOAD_DESCRIPTION = """Upload one agent run (multipart, `Authorization: Token <token>`).

Send either loose files (`solution`, one or more `transcript`, optionally `transcript_name`
with each transcript's path in the run folder such as `subagents/agent-1.jsonl`, optionally
`solution_files`: the native sources solution.py builds from its own folder) or one `bundle`:
a .zip or .tar.gz of the run folder (`solution.py` and the `.cu`/`.cuh`/`.h`/`.hpp`/`.cpp` files
beside it, top-level `*.jsonl`/`*.json` transcripts, `subagents/`, optional `result.json` with
agent-reported metadata). A missing or unparseable solution is accepted and graded as a
failure. 201 for a new run; 200 with the earlier run for an
identical re-upload; 400/413 with `detail` for refused input, in which case nothing is stored;
429 with `detail` over a quota (the upload rate per token, with `Retry-After`, or the cap on a
submitter's waiting evaluations), again storing nothing.
"""


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request is too large."


class RunPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Upload a run (POST, authenticated), list published runs (GET, filtered and paginated)
    and follow one run's status (GET, by UUID)."""

    lookup_field = "uuid"
    serializer_class = serializers.RunUploadSerializer
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    pagination_class = RunPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = RunFilter

    def get_queryset(self):
        if self.action == "list":
            return selectors.published_runs_listing()
        return selectors.run_detail_queryset().visible_to(self.request.user)

    def get_serializer_class(self):
        return {
            "retrieve": serializers.RunSerializer,
            "list": serializers.RunListSerializer,
        }.get(self.action, self.serializer_class)

    def get_throttles(self):
        return [UploadThrottle()] if self.action == "create" else super().get_throttles()

    def initial(self, request, *args, **kwargs):
        # Before authentication: a session's CSRF check reads the whole body.
        if request.method == "POST":
            _refuse_oversize_body(request)
        super().initial(request, *args, **kwargs)

    @extend_schema(
        description=UPLOAD_DESCRIPTION,
        request={"multipart/form-data": serializers.RunUploadSerializer},
        responses={
            201: serializers.RunCreatedSerializer,
            200: OpenApiResponse(serializers.RunCreatedSerializer, "The identical earlier run"),
            409: OpenApiResponse(
                description="The same files are already a run of yours with another effort or "
                "metadata: `detail`, and that run's `id` and `url`; nothing was stored"
            ),
            429: OpenApiResponse(description="Over the upload rate or the waiting-evaluation cap"),
        },
    )
    def create(self, request):
        upload = self.get_serializer(data=_request_data(request))
        upload.is_valid(raise_exception=True)
        try:
            run, created = create_run_from_upload(upload.validated_data, submitter=request.user)
        except UploadConflict as error:
            body = {"detail": str(error), "id": str(error.run.uuid)}
            body["url"] = request.build_absolute_uri(error.run.get_absolute_url())
            return Response(body, status=error.status_code)
        except IntakeError as error:
            response = Response({"detail": str(error)}, status=error.status_code)
            if getattr(error, "retry_after_s", None):
                response["Retry-After"] = str(error.retry_after_s)
            return response
        run.refresh_from_db(fields=["status"])  # with eager Celery, grading already happened
        body = serializers.RunCreatedSerializer(run, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def _refuse_oversize_body(request) -> None:
    limit = BODY_OVERHEAD + max(
        settings.ARENA_MAX_TRANSCRIPT_BYTES + settings.ARENA_MAX_SOLUTION_BYTES + MAX_SIDECAR_BYTES,
        settings.ARENA_MAX_ARCHIVE_BYTES,
    )
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise PayloadTooLarge(f"The request body is {length} bytes; the limit is {limit}.")


def _request_data(request):
    try:
        return request.data
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise PayloadTooLarge(
            f"The form fields exceed {limit} bytes; send files as files."
        ) from None
    except TooManyFilesSent:
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        raise ValidationError({"detail": f"More than {limit} files in one request."}) from None


class _RegistryViewSet(viewsets.ReadOnlyModelViewSet):
    lookup_field = "slug"
    lookup_value_regex = r"[-\w]+"  # a NUL reaching PostgreSQL is an error, not a miss
    permission_classes = [permissions.AllowAny]


class ProblemViewSet(_RegistryViewSet):
    queryset = Problem.objects.filter(is_active=True)
    serializer_class = serializers.ProblemSerializer


class LanguageModelViewSet(_RegistryViewSet):
    queryset = LanguageModel.objects.all()
    serializer_class = serializers.LanguageModelSerializer


class HarnessViewSet(_RegistryViewSet):
    queryset = Harness.objects.all()
    serializer_class = serializers.HarnessSerializer


class HardwareTargetViewSet(_RegistryViewSet):
    queryset = HardwareTarget.objects.all()
    serializer_class = serializers.HardwareTargetSerializer
