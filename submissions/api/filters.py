"""Filters of the run list (django-filter): ``GET /api/v1/runs/?problem=softmax&verdict=ok``."""

import django_filters

from submissions.models import Evaluation, Run


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
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Run
        fields = []
