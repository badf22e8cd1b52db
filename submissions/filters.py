"""Filters of the run list (django-filter), shared by the API and the runs page:
``GET /api/v1/runs/?problem=softmax&verdict=ok``, ``/runs/?verdict=ok``."""

from datetime import MAXYEAR, UTC, datetime

import django_filters

from submissions.models import Evaluation, Run


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """Compares in UTC: PostgreSQL refuses offsets beyond ±15:59, which the parser accepts."""

    def filter(self, qs, value):
        if value is not None:
            try:
                value = value.astimezone(UTC)
            except OverflowError:  # past either end of the calendar once in UTC
                value = datetime.max if value.year == MAXYEAR else datetime.min
                value = value.replace(tzinfo=UTC)
        return super().filter(qs, value)


class RunFilter(django_filters.FilterSet):
    problem = django_filters.CharFilter(field_name="problem__slug")
    model = django_filters.CharFilter(field_name="language_model__slug")
    harness = django_filters.CharFilter(field_name="harness__slug")
    hardware = django_filters.CharFilter(field_name="hardware__slug")
    effort = django_filters.CharFilter()
    status = django_filters.ChoiceFilter(choices=Run.Status.choices)
    verdict = django_filters.ChoiceFilter(
        field_name="headline_evaluation__verdict",
        choices=Evaluation.Verdict.choices,
        help_text="Verdict of the run's headline evaluation",
    )
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Run
        fields = []
