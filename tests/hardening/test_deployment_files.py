"""The image and the compose file agree with what the suite runs."""

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_image_installs_the_torch_the_gpu_grades_ran():
    results = (ROOT / "bench" / "results" / "peer_regrade_h100.jsonl").read_text().splitlines()
    graded = {
        json.loads(line)["result"]["environment"].get("torch", "").split("+")[0] for line in results
    }
    dockerfile = re.search(r"ARG TORCH_VERSION=([\w.]+)", (ROOT / "Dockerfile").read_text())
    assert graded - {""} == {dockerfile.group(1)}


def test_the_image_collects_static_files_as_production_serves_them():
    # whitenoise's manifest storage (DEBUG off) needs the hashed names written at build time
    assert "RUN DEBUG=0 " in (ROOT / "Dockerfile").read_text()


def test_the_web_processes_share_one_quota_cache():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    environment = compose["x-app"]["environment"]
    assert environment["ARENA_CACHE_URL"].startswith("redis://redis:6379/")
    assert environment["ARENA_CACHE_URL"] != environment["CELERY_BROKER_URL"]


def test_the_sweeper_has_a_queue_and_a_worker_of_its_own():
    from django.conf import settings

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert settings.CELERY_TASK_ROUTES["submissions.sweep_evaluations"] == {
        "queue": settings.SWEEP_QUEUE
    }
    assert f"--beat -Q {settings.SWEEP_QUEUE} " in services["beat"]["command"]
    for name, service in services.items():  # no other worker takes sweeps (or waits for them)
        queues = re.search(r"-Q (\S+)", str(service.get("command", "")))
        if name != "beat" and queues:
            assert settings.SWEEP_QUEUE not in queues.group(1).split(",")


def test_gunicorn_is_reached_through_the_proxy_only():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert "ports" not in services["web"] and services["proxy"]["ports"] == ["8000:8080"]
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["proxy"]["volumes"]
