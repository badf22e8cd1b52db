"""Staff-only: queue a new grading of a run; its earlier evaluations stay as history."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from submissions.api.serializers import EvaluationSerializer
from submissions.api.throttles import ReevaluateThrottle
from submissions.models import Evaluation, HardwareTarget, Run
from submissions.services import queue
from submissions.services.evaluations import no_worker_message, reevaluate


class ReevaluateRequestSerializer(serializers.Serializer):
    hardware = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=HardwareTarget.objects.all(),
        required=False,
        help_text="Hardware target slug; the run's own target when omitted",
    )
    force = serializers.BooleanField(
        default=False, help_text="Queue even when no worker listens on the target's queue now"
    )


class ReevaluateView(APIView):
    permission_classes = [permissions.IsAdminUser]
    throttle_classes = [ReevaluateThrottle]

    @extend_schema(
        request=ReevaluateRequestSerializer,
        responses={
            202: EvaluationSerializer(many=True),
            409: OpenApiResponse(description="No worker listens on the target's queue"),
            429: OpenApiResponse(description="Over the re-evaluation rate (`Retry-After`)"),
        },
    )
    def post(self, request, run_id):
        run = get_object_or_404(Run, uuid=run_id)
        body = ReevaluateRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        hardware = body.validated_data.get("hardware") or run.hardware
        if not body.validated_data["force"] and queue.unserved([hardware]):
            detail = no_worker_message(hardware) + " Pass force=true to queue it anyway."
            return Response({"detail": detail}, status.HTTP_409_CONFLICT)
        created = reevaluate(runs=[run], hardware=hardware, user=request.user)
        # With eager Celery the grading already ran: show each evaluation as it is now.
        fresh = Evaluation.objects.filter(pk__in=[e.pk for e in created]).order_by("pk")
        fresh = fresh.select_related("hardware").prefetch_related("shapes")
        return Response(EvaluationSerializer(fresh, many=True).data, status.HTTP_202_ACCEPTED)
