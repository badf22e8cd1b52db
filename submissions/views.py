import json

from django.shortcuts import render
from django.views.decorators.http import require_GET

from submissions import selectors


@require_GET
def home(request):
    runs = selectors.recent_published_runs()
    return render(request, "submissions/home.html", {"runs": runs})


@require_GET
def run_detail(request, run_id):
    run = selectors.run_for_viewer(run_id=run_id, user=request.user)
    context = {
        "run": run,
        "reports": selectors.evaluation_reports(run),
        "metadata_json": json.dumps(run.metadata, indent=2, ensure_ascii=False),
        "spread": selectors.timing_spread(run),
    }
    return render(request, "submissions/run_detail.html", context)
