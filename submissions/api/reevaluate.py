"""Staff-only: queue a new grading of a run; its earlier evaluations stay as history."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from submissions.api.serializers import EvaluationSerializer
from submissions.evaluations import reevaluate
from submissions.models import HardwareTarget, Run


class ReevaluateRequestSerializer(serializers.Serializer):
    hardware = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=HardwareTarget.objects.all(),
        required=False,
        help_text="Hardware target slug; the run's own target when omitted",
    )


class ReevaluateView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        request=ReevaluateRequestSerializer, responses={202: EvaluationSerializer(many=True)}
    )
    def post(self, request, run_id):
        run = get_object_or_404(Run, uuid=run_id)
        body = ReevaluateRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        created = reevaluate(
            runs=[run], hardware=body.validated_data.get("hardware"), user=request.user
        )
        return Response(EvaluationSerializer(created, many=True).data, status.HTTP_202_ACCEPTED)
