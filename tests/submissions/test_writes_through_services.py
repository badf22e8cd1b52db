"""Every write to the database goes through ``submissions/services/`` (README, "Architecture";
docs/architecture.md): the pages, the API, the admin, the commands and the demo call services.
The code is walked for ORM writes elsewhere, and every admin that can change a row is held to
services."""

import ast
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.test import RequestFactory

ROOT = Path(__file__).resolve().parents[2]
APPLICATION = ("submissions", "arena_web")
# The load-test data and the load test write what they need through services too.
LOAD_TEST = ("bench/synthetic_history.py", "bench/load.py")
WRITERS = {"save", "delete", "create", "bulk_create", "bulk_update", "get_or_create"}
WRITERS |= {"update_or_create"}
QUERYSETS = {"objects", "filter", "exclude", "all", "select_for_update"}
# The board snapshot is a cache of what the runs say; its one writer recomputes it whole (the
# services call it when a run changes, and a reader of a board never computed fills it in).
ALLOWED = {("submissions/boards/snapshot.py", "refresh_board")}


def orm_writes(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, call) of each ORM write in `source`: a model or queryset
    writer, or `update` on a queryset. `formset.save(commit=False)` writes nothing."""
    tree = ast.parse(source)
    found = []
    for function in [tree, *ast.walk(tree)]:
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            continue
        name = getattr(function, "name", "")
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = ast.unparse(node.func.value)
            uncommitted = any(
                k.arg == "commit" and ast.unparse(k.value) == "False" for k in node.keywords
            )
            queryset = any(part in QUERYSETS for part in _names(node.func.value))
            if (node.func.attr in WRITERS and not uncommitted) or (
                node.func.attr == "update" and queryset
            ):
                found.append((node.lineno, name, f"{receiver}.{node.func.attr}"))
    # a call inside a function is also seen from the module: keep the innermost name
    innermost = {}
    for line, name, call in found:
        if name or (line, call) not in innermost:
            innermost[(line, call)] = name
    return sorted((line, name, call) for (line, call), name in innermost.items())


def _names(node: ast.AST) -> list[str]:
    """The attribute and call names along a receiver chain: `A.objects.filter(x)` gives
    objects, filter."""
    names = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        else:
            return names


def test_the_walker_finds_the_writes_it_is_for():
    source = """
def view(run, form):
    run.save()
    Run.objects.filter(pk=1).update(published=True)
    Run.objects.create(uuid=1)
    form.save(commit=False)
    {}.update(a=1)
    digest.update(b"x")
"""
    assert [call for _, _, call in orm_writes(source)] == [
        "run.save",
        "Run.objects.filter(pk=1).update",
        "Run.objects.create",
    ]


def test_no_orm_write_outside_the_services():
    paths = [path for package in APPLICATION for path in sorted((ROOT / package).rglob("*.py"))]
    writes = []
    for path in paths + [ROOT / name for name in LOAD_TEST]:
        relative = path.relative_to(ROOT).as_posix()
        if "/services/" in relative or "/migrations/" in relative:
            continue
        for line, function, call in orm_writes(path.read_text()):
            if (relative, function) not in ALLOWED:
                writes.append(f"{relative}:{line} {function}: {call}")
    assert writes == []


def _admins():
    return [
        model_admin
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "submissions"
    ]


@pytest.fixture
def superuser_request(django_user_model):
    request = RequestFactory().get("/admin/")
    request.user = django_user_model(username="root", is_staff=True, is_superuser=True)
    return request


@pytest.mark.django_db
@pytest.mark.parametrize("model_admin", _admins(), ids=lambda a: type(a).__name__)
def test_every_admin_that_can_write_writes_through_services(model_admin, superuser_request):
    kind = type(model_admin)
    defaults = {name for name in ("save_model", "delete_model", "delete_queryset", "save_formset")}
    defaults = {name for name in defaults if getattr(kind, name) is getattr(ModelAdmin, name)}
    can_save = model_admin.has_add_permission(superuser_request)
    can_save = can_save or model_admin.has_change_permission(superuser_request)
    if can_save:
        assert "save_model" not in defaults
    if model_admin.has_delete_permission(superuser_request):
        assert not defaults & {"delete_model", "delete_queryset"}
    inlines = model_admin.get_inline_instances(superuser_request)
    if any(_inline_writes(inline, superuser_request) for inline in inlines):
        assert "save_formset" not in defaults


def _inline_writes(inline, request) -> bool:
    return bool(
        inline.has_add_permission(request, None)
        or inline.has_change_permission(request, None)
        or (inline.can_delete and inline.has_delete_permission(request, None))
    )
