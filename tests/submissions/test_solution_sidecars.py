"""Native sources uploaded beside solution.py: intake, storage, dedupe, pages, API, the worker."""

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from runners.schema import EvaluationResult
from runners.solution_files import MAX_SIDECAR_BYTES, MAX_SIDECARS, content_sha256
from submissions.models import Run, Solution
from submissions.services import engine
from tests.submissions.helpers import (
    RUN_FOLDER,
    SOLUTION,
    assert_nothing_stored,
    form,
    loose_files,
    stored_files,
    tar_gz_bytes,
    upload,
    zip_bytes,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/runs/"
KERNEL = b"#include <torch/extension.h>\n__global__ void row_kernel(float* x) { x[0] = 1.0f; }\n"
HEADER = b"#pragma once\n#define BLOCK 256\n"
SIDECARS = {"kernel.cu": KERNEL, "common.cuh": HEADER}


def with_sidecars(sidecars: dict[str, bytes] = SIDECARS, **overrides) -> dict:
    files = [upload(name, content) for name, content in sidecars.items()]
    return loose_files(solution_files=files, **overrides)


def post(api, registry, files: dict):
    return api.post(URL, form(registry, **files), format="multipart")


def refuse(api, registry, files: dict, media_root, *, status=400) -> str:
    response = post(api, registry, files)
    assert response.status_code == status, response.content
    assert_nothing_stored(media_root)
    return response.json()["detail"]


def test_loose_sidecars_are_stored_beside_the_solution(api, registry):
    response = post(api, registry, with_sidecars())

    assert response.status_code == 201, response.json()
    solution = Run.objects.get().solution
    assert solution.sha256 == content_sha256(SOLUTION, SIDECARS)
    assert solution.code == SOLUTION.decode() and solution.size == len(SOLUTION)
    stored = {s.name: s for s in solution.sidecar_files}
    assert sorted(stored) == ["common.cuh", "kernel.cu"]
    assert stored["kernel.cu"].code == KERNEL.decode()
    assert stored["kernel.cu"].size == len(KERNEL)
    assert stored["kernel.cu"].sha256 == hashlib.sha256(KERNEL).hexdigest()
    assert stored["kernel.cu"].path.endswith(f"{solution.sha256}/kernel.cu")


@pytest.mark.parametrize("pack", [zip_bytes, tar_gz_bytes], ids=["zip", "tar.gz"])
def test_a_bundle_takes_the_native_sources_next_to_solution_py(api, registry, pack):
    members = RUN_FOLDER | SIDECARS
    members["csrc/other.cu"] = b"// not beside solution.py: left like any other file\n"
    members["._kernel.cu"] = b"\x00\x05\x16\x07"  # macOS tar's extended attributes
    response = post(api, registry, {"bundle": upload("run.bundle", pack(members))})

    assert response.status_code == 201, response.json()
    solution = Run.objects.get().solution
    assert [s.name for s in solution.sidecar_files] == ["common.cuh", "kernel.cu"]
    assert solution.sha256 == content_sha256(SOLUTION, SIDECARS)


def test_a_bundle_without_solution_py_keeps_no_sidecars(api, registry):
    members = {"transcript.jsonl": RUN_FOLDER["transcript.jsonl"], **SIDECARS}
    response = post(api, registry, {"bundle": upload("run.tar.gz", tar_gz_bytes(members))})

    assert response.status_code == 201, response.json()
    assert Run.objects.get().solution is None


def test_identical_folders_share_one_solution_and_a_single_file_keeps_its_hash(
    api, other_api, registry, media_root
):
    first = post(api, registry, with_sidecars())
    files_after_first = stored_files(media_root)
    again = post(api, registry, with_sidecars())
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert stored_files(media_root) == files_after_first

    assert post(other_api, registry, with_sidecars()).status_code == 201
    assert Run.objects.count() == 2 and Solution.objects.count() == 1

    assert post(other_api, registry, loose_files()).status_code == 201
    single = Solution.objects.get(sidecars=[])
    assert single.sha256 == hashlib.sha256(SOLUTION).hexdigest()

    changed = with_sidecars({**SIDECARS, "kernel.cu": KERNEL + b"// tuned\n"})
    assert post(other_api, registry, changed).status_code == 201
    assert Solution.objects.count() == 3


def test_the_same_solution_py_with_other_kernels_is_not_a_twin(api, registry):
    post(api, registry, with_sidecars())
    post(api, registry, with_sidecars({"kernel.cu": KERNEL + b"// other\n"}))
    post(api, registry, loose_files())
    assert len(set(Solution.objects.values_list("ast_hash", flat=True))) == 3


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("helper.py", b"x = 1\n", "'helper.py' beside solution.py: only native sources"),
        ("kernel.so", b"\x7fELF", "'kernel.so' beside solution.py: only native sources"),
        (".kernel.cu", KERNEL, "'.kernel.cu' beside solution.py: use letters"),
        ("k ernel.cu", KERNEL, "'k ernel.cu' beside solution.py: use letters"),
        ("kernel.cu", b"\xff\xfe", "kernel.cu is not UTF-8 text"),
        ("kernel.cu", b"int x;\x00", "kernel.cu holds a NUL byte"),
    ],
)
def test_a_sidecar_outside_the_engines_rules_is_refused_by_name(
    api, registry, media_root, name, content, says
):
    assert says in refuse(api, registry, with_sidecars({name: content}), media_root)


def test_sidecars_past_the_count_or_size_limit_or_twice_named_are_refused(
    api, registry, media_root
):
    many = {f"k{i}.h": b"//\n" for i in range(MAX_SIDECARS + 1)}
    assert f"the limit is {MAX_SIDECARS}" in refuse(api, registry, with_sidecars(many), media_root)
    big = {"a.cu": b"/" * MAX_SIDECAR_BYTES, "b.cu": b"//\n"}
    message = refuse(api, registry, with_sidecars(big), media_root, status=413)
    assert f"the limit is {MAX_SIDECAR_BYTES}" in message
    twice = [upload("kernel.cu", KERNEL), upload("kernel.cu", KERNEL)]
    message = refuse(api, registry, loose_files(solution_files=twice), media_root)
    assert "share one name" in message


def test_sidecars_without_a_solution_are_refused(api, registry, media_root):
    files = with_sidecars()
    del files["solution"]
    assert "without solution.py" in refuse(api, registry, files, media_root)


def test_sidecars_and_a_bundle_together_are_refused(api, registry, media_root):
    files = {
        "bundle": upload("run.zip", zip_bytes(RUN_FOLDER)),
        "solution_files": [upload("kernel.cu", KERNEL)],
    }
    response = post(api, registry, files)
    assert response.status_code == 400
    assert "either a bundle or loose files" in str(response.json())
    assert_nothing_stored(media_root)


def test_the_run_detail_lists_the_sidecars_names_and_sizes(api, registry):
    created = post(api, registry, with_sidecars()).json()
    detail = api.get(created["status_url"]).json()
    assert detail["solution_files"] == [
        {"name": "common.cuh", "size": len(HEADER), "sha256": hashlib.sha256(HEADER).hexdigest()},
        {"name": "kernel.cu", "size": len(KERNEL), "sha256": hashlib.sha256(KERNEL).hexdigest()},
    ]
    assert detail["solution_sha256"] == content_sha256(SOLUTION, SIDECARS)


def test_the_run_page_shows_each_sidecar_highlighted_and_escaped(
    api, registry, client, django_assert_max_num_queries
):
    hostile = b"// </pre><script>alert(1)</script>\n" + KERNEL
    created = post(api, registry, with_sidecars({**SIDECARS, "kernel.cu": hostile})).json()
    Run.objects.update(published=True)

    with django_assert_max_num_queries(7):  # as many as a run without sidecars
        page = client.get(urlsplit(created["url"]).path).content.decode()

    assert '<h3 id="kernel.cu">kernel.cu</h3>' in page
    assert '<h3 id="common.cuh">common.cuh</h3>' in page
    assert 'id="kernel.cu-L-2"' in page  # line anchors of their own, beside solution.py's L-N
    assert '<span class="n">row_kernel</span>' in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert" in page


def engine_looking_at(look):
    """A stand-in for the engine's process: `look` gets what --solution names, then an ok
    result is written where --json says."""

    def supervise(command, *, on_tick, log=None):
        look(Path(command[command.index("--solution") + 1]))
        result = EvaluationResult(problem="p", problem_version="v", device="cpu", verdict="ok")
        Path(command[command.index("--json") + 1]).write_text(json.dumps(result.to_dict()))
        return 0, ""

    return supervise


def test_the_worker_hands_the_engine_the_folder_as_uploaded(api, registry, monkeypatch):
    post(api, registry, with_sidecars())
    run = Run.objects.get()
    seen = {}

    def look(folder: Path) -> None:
        seen.update({path.name: path.read_bytes() for path in folder.iterdir()})

    monkeypatch.setattr(engine, "_supervise", engine_looking_at(look))
    evaluation = SimpleNamespace(run=run, solution=None, hardware=run.hardware)
    engine.grade(evaluation=evaluation, on_tick=lambda: True)

    assert seen == {"solution.py": SOLUTION, **SIDECARS}


def test_a_single_file_solution_still_reaches_the_engine_as_a_file(monkeypatch):
    seen = []
    monkeypatch.setattr(engine, "_supervise", engine_looking_at(lambda p: seen.append(p.is_file())))
    engine.run_engine(
        problem="p", solution="x = 1\n", device="cpu", baselines={}, on_tick=lambda: True
    )
    assert seen == [True]
