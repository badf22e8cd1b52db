"""Read API of the boards: the board, the matrix and a problem's ranked runs, as JSON or CSV.

Answers carry an ETag and Last-Modified taken from the board snapshot's ``computed_at``; a
client holding the current one gets 304 before anything is computed.
"""

import csv
import hashlib
import io
import types
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from datetime import datetime
from typing import Union, get_args, get_origin, get_type_hints

from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.http import http_date, quote_etag
from drf_spectacular.plumbing import resolve_type_hint
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from submissions import boards
from submissions.boards import exports, snapshot
from submissions.boards.board import SORT_KEYS, BoardFilters, sort_from_query
from submissions.boards.matrix import STATS
from submissions.models import HardwareTarget, Problem


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if isinstance(data, str):
            return data.encode()
        out = io.StringIO()  # an error's {"detail": ...}, as a two-line table
        csv.writer(out).writerows([list(data), [str(value) for value in data.values()]])
        return out.getvalue().encode()


def dataclass_schema(cls) -> dict:
    """The OpenAPI schema of a dataclass's ``asdict`` form, so the export is its own spec."""
    hints = get_type_hints(cls)
    properties = {field.name: _hint_schema(hints[field.name]) for field in fields(cls)}
    return {"type": "object", "properties": properties, "required": list(properties)}


def _hint_schema(hint) -> dict:
    origin, args = get_origin(hint), get_args(hint)
    if is_dataclass(hint):
        return dataclass_schema(hint)
    if origin in (list, tuple):
        return {"type": "array", "items": _hint_schema(args[0])}
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        return {**_hint_schema(present[0]), "nullable": len(present) < len(args)}
    return resolve_type_hint(hint)


FORMAT = OpenApiParameter(
    "format", str, enum=["json", "csv"], description="Answer as JSON (default) or CSV."
)
FILTER_NOTES = {
    "harness": "Only these harnesses (slugs; repeat the parameter for several).",
    "model": "Only these language models (slugs).",
    "provider": "Only models of these providers.",
    "category": "Only problems of these categories; scores are over those problems.",
    "budget": "Only runs declaring these wall budgets (whole seconds, e.g. 2700), or `none`.",
}
FILTERS = [
    *(
        OpenApiParameter(name, str, many=True, explode=True, description=description)
        for name, description in FILTER_NOTES.items()
    ),
    OpenApiParameter("since", OpenApiTypes.DATE, description="Runs created on or after."),
    OpenApiParameter("until", OpenApiTypes.DATE, description="Runs created on or before."),
    OpenApiParameter(
        "verified", OpenApiTypes.BOOL, description="Only runs a verified campaign launched."
    ),
]
CSV_NOTE = "CSV: one line per {}; missing figures are empty."


def _responses(export: type, *, csv_line: str) -> dict:
    return {
        (200, "application/json"): OpenApiResponse(dataclass_schema(export)),
        (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, CSV_NOTE.format(csv_line)),
        304: OpenApiResponse(description="Unchanged since the ETag or date the client holds."),
        400: OpenApiResponse(description="A malformed parameter (date, stat)."),
        404: OpenApiResponse(description="No such ranked hardware target (or problem)."),
    }


class _BoardsView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes = []  # public reads: no session or token lookup
    renderer_classes = [JSONRenderer, CsvRenderer]


class BoardView(_BoardsView):
    @extend_schema(
        summary="The board of one ranked hardware target",
        description="One row per agent configuration (model, harness, effort): score with "
        "its 95% bootstrap interval, tied ranks, pass rates, speedups, medians.",
        parameters=[
            *FILTERS,
            OpenApiParameter("sort", str, enum=SORT_KEYS, description="Column to sort by."),
            OpenApiParameter("dir", str, enum=["asc", "desc"], description="Sort direction."),
            FORMAT,
        ],
        responses=_responses(exports.BoardExport, csv_line="configuration"),
    )
    def get(self, request, hardware: str):
        target = _ranked(hardware)
        filters = _filters(request)
        sort, descending = sort_from_query(request.query_params)
        return _export(
            request,
            target=target,
            filename=f"board-{target.slug}",
            read=lambda: boards.board(
                hardware=target, filters=filters, sort=sort, descending=descending
            ),
            as_data=exports.board_export,
            as_csv=exports.board_csv,
        )


class MatrixView(_BoardsView):
    @extend_schema(
        summary="The model x problem matrix of one ranked hardware target",
        description="Per configuration and active problem: the best or median run score, "
        "its share of the column's best, a failure kind when no run is correct, the run.",
        parameters=[
            *FILTERS,
            OpenApiParameter("stat", str, enum=STATS, description="Best (default) or median."),
            FORMAT,
        ],
        responses=_responses(exports.MatrixExport, csv_line="cell"),
    )
    def get(self, request, hardware: str):
        target = _ranked(hardware)
        filters, stat = _filters(request), request.query_params.get("stat", "best")
        if stat not in STATS:
            raise ValidationError({"detail": f"stat is one of {', '.join(STATS)}."})
        return _export(
            request,
            target=target,
            filename=f"matrix-{target.slug}",
            read=lambda: boards.matrix(hardware=target, stat=stat, filters=filters),
            as_data=exports.matrix_export,
            as_csv=exports.matrix_csv,
        )


class ProblemRunsView(_BoardsView):
    @extend_schema(
        summary="A problem's ranked runs on one ranked hardware target",
        description="Best score first; equal scores share a rank.",
        parameters=[FORMAT],
        responses=_responses(exports.ProblemRuns, csv_line="run"),
    )
    def get(self, request, hardware: str, problem: str):
        target = _ranked(hardware)
        found = Problem.objects.filter(slug=problem, is_active=True).first()
        if found is None:
            raise NotFound(f"No active problem {problem!r}.")
        return _export(
            request,
            target=target,
            filename=f"runs-{found.slug}-{target.slug}",
            read=lambda: exports.problem_runs(problem=found, hardware=target),
            as_data=lambda result: result,
            as_csv=exports.problem_runs_csv,
        )


def _ranked(slug: str) -> HardwareTarget:
    target = boards.ranked_target(slug=slug)
    if target is None:
        ranked = ", ".join(t.slug for t in boards.ranked_hardware()) or "none"
        raise NotFound(f"No ranked hardware target {slug!r}; ranked targets: {ranked}.")
    return target


def _filters(request) -> BoardFilters:
    try:
        return BoardFilters.from_query(request.query_params, strict=True)
    except ValueError as error:
        raise ValidationError({"detail": str(error)}) from None


def _export(
    request,
    *,
    target: HardwareTarget,
    filename: str,
    read: Callable,
    as_data: Callable,
    as_csv: Callable,
):
    computed_at = snapshot.read(hardware=target).computed_at
    unchanged = get_conditional_response(
        request, etag=_etag(request, computed_at), last_modified=int(computed_at.timestamp())
    )
    if unchanged is not None:
        return _cache_headers(unchanged, request=request, computed_at=computed_at)
    result = read()
    if request.accepted_renderer.format == "csv":
        response = Response(as_csv(result))
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    else:
        response = Response(exports.as_json(as_data(result)))
    return _cache_headers(response, request=request, computed_at=computed_at)


def _etag(request, computed_at: datetime) -> str:
    # One snapshot answers many URLs (filters, sort, format): each gets its own tag.
    version = f"{snapshot.FORMAT_VERSION}|{computed_at.isoformat()}|{request.get_full_path()}"
    version += f"|{request.accepted_renderer.format}"
    return quote_etag(hashlib.sha256(version.encode()).hexdigest()[:32])


def _cache_headers(response, *, request, computed_at: datetime):
    response["ETag"] = _etag(request, computed_at)
    response["Last-Modified"] = http_date(computed_at.timestamp())
    patch_cache_control(response, public=True, no_cache=True)
    patch_vary_headers(response, ["Accept"])
    return response
