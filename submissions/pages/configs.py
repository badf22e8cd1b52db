"""Model and harness pages: their agent configurations' results across problems and hardware."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from submissions import boards
from submissions.models import Harness, LanguageModel


@require_GET
def model_index(request):
    context = {"kind": "model", "results": boards.config_results()}
    return render(request, "submissions/config_index.html", context)


@require_GET
def harness_index(request):
    results = sorted(boards.config_results(), key=lambda r: (r.harness_name, r.config_label))
    context = {"kind": "harness", "results": results}
    return render(request, "submissions/config_index.html", context)


@require_GET
def model_detail(request, slug):
    model = get_object_or_404(LanguageModel, slug=slug)
    context = {"kind": "model", "subject": model, "results": boards.config_results(model=model)}
    return render(request, "submissions/config_detail.html", context)


@require_GET
def harness_detail(request, slug):
    harness = get_object_or_404(Harness, slug=slug)
    results = boards.config_results(harness=harness)
    context = {"kind": "harness", "subject": harness, "results": results}
    return render(request, "submissions/config_detail.html", context)
