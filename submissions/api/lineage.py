"""Staff-only: grade a sample of a run's lineage versions; those gradings never count."""

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from submissions.api.serializers import EvaluationSerializer
from submissions.api.throttles import ReevaluateThrottle
from submissions.models import Evaluation, HardwareTarget, Run
from submissions.services import queue
from submissions.services.evaluations import no_worker_message
from submissions.services.lineage import grade_lineage


class GradeLineageRequestSerializer(serializers.Serializer):
    hardware = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=HardwareTarget.objects.all(),
        required=False,
        help_text="Hardware target slug; the run's own target when omitted",
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=2,
        max_value=100,
        help_text="Most versions to grade (first and final always among them); "
        "ARENA_LINEAGE_GRADE_LIMIT when omitted",
    )


class GradeLineageView(APIView):
    permission_classes = [permissions.IsAdminUser]
    throttle_classes = [ReevaluateThrottle]

    @extend_schema(
        request=GradeLineageRequestSerializer,
        responses={
            202: EvaluationSerializer(many=True),
            409: OpenApiResponse(description="No worker listens on the target's queue"),
        },
    )
    def post(self, request, run_id):
        run = get_object_or_404(Run, uuid=run_id)
        body = GradeLineageRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        hardware = body.validated_data.get("hardware") or run.hardware
        if queue.unserved([hardware]):
            return Response({"detail": no_worker_message(hardware)}, status.HTTP_409_CONFLICT)
        limit = body.validated_data.get("limit", settings.ARENA_LINEAGE_GRADE_LIMIT)
        created = grade_lineage(run=run, hardware=hardware, limit=limit, user=request.user)
        # With eager Celery the gradings already ran: show each as it is now.
        fresh = Evaluation.objects.filter(pk__in=[e.pk for e in created]).order_by("pk")
        fresh = fresh.select_related("hardware").prefetch_related("shapes")
        return Response(EvaluationSerializer(fresh, many=True).data, status.HTTP_202_ACCEPTED)
