"""Staff only: verdicts on runs, invalidation and restoring, and the review queue."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from submissions import selectors
from submissions.api.serializers import AnnotationSerializer, RunListSerializer
from submissions.api.views import RunPagination
from submissions.models import Annotation, Run
from submissions.services import audit


class AnnotationRequestSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Annotation.Verdict.choices)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    evidence = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text='[{"kind": "event", "event": "e-<id>"}, {"kind": "lines", "start": 1, "end": 9}]',
    )


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=10_000, help_text="Shown on the run's page")


class AnnotateView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(request=AnnotationRequestSerializer, responses={201: AnnotationSerializer})
    def post(self, request, run_id):
        run = get_object_or_404(Run, uuid=run_id)
        body = AnnotationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            annotation = audit.annotate(run=run, author=request.user, **body.validated_data)
        except audit.AuditError as error:
            return Response({"detail": str(error)}, status.HTTP_400_BAD_REQUEST)
        return Response(AnnotationSerializer(annotation).data, status.HTTP_201_CREATED)


class InvalidateView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(request=ReasonSerializer, responses={200: None})
    def post(self, request, run_id):
        runs = Run.objects.filter(uuid=run_id)
        get_object_or_404(runs)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            audit.invalidate(runs=runs, reason=body.validated_data["reason"], user=request.user)
        except audit.AuditError as error:
            return Response({"detail": str(error)}, status.HTTP_400_BAD_REQUEST)
        return Response({"invalidated": True})


class RestoreView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(request=None, responses={200: None})
    def post(self, request, run_id):
        runs = Run.objects.filter(uuid=run_id)
        get_object_or_404(runs)
        audit.restore(runs=runs)
        return Response({"invalidated": False})


class ReviewQueueView(generics.ListAPIView):
    """Flagged runs no one has reviewed, and graded runs held for review, oldest first."""

    permission_classes = [permissions.IsAdminUser]
    serializer_class = RunListSerializer
    pagination_class = RunPagination

    def get_queryset(self):
        return selectors.review_queue()
