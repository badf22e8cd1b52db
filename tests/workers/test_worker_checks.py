"""A worker refuses to start with settings that would lose or duplicate evaluations."""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from django.conf import settings

from arena_web.celery import app
from submissions.worker_checks import delivery_problems

REDIS = "redis://127.0.0.1:6379/0"


def conf(**overrides):
    values = {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": 600,
        "broker_transport_options": {"visibility_timeout": 1200},
    }
    return SimpleNamespace(**(values | overrides))


def problems(**overrides) -> list[str]:
    queues = overrides.pop("queues", ["gpu.h100-sxm"])
    concurrency = overrides.pop("concurrency", 1)
    return delivery_problems(
        conf(**overrides), broker_url=REDIS, queues=queues, concurrency=concurrency
    )


def test_the_project_settings_are_safe_for_a_gpu_worker():
    found = delivery_problems(app.conf, broker_url=REDIS, queues=["gpu.h100-sxm"], concurrency=1)
    assert found == []
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert visibility > settings.CELERY_TASK_TIME_LIMIT > settings.ARENA_EVAL_TIMEOUT_S


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ({"task_acks_late": False}, "task_acks_late is off"),
        ({"task_reject_on_worker_lost": False}, "task_reject_on_worker_lost is off"),
        ({"worker_prefetch_multiplier": 4}, "worker_prefetch_multiplier is 4"),
        ({"task_time_limit": None}, "task_time_limit is unset"),
        ({"broker_transport_options": {"visibility_timeout": 600}}, "visibility_timeout 600s"),
        ({"broker_transport_options": {}, "task_time_limit": 4000}, "visibility_timeout 3600s"),
        ({"concurrency": 2}, "concurrency is 2 on gpu.h100-sxm"),
    ],
)
def test_each_unsafe_setting_is_named(override, complaint):
    assert any(complaint in problem for problem in problems(**override))


def test_a_cpu_queue_may_run_several_tasks_at_once():
    assert problems(queues=["cpu"], concurrency=4) == []


def test_brokers_without_visibility_timeouts_skip_that_check():
    found = delivery_problems(
        conf(task_time_limit=None), broker_url="filesystem://", queues=["cpu"], concurrency=1
    )
    assert found == []


def test_a_gpu_worker_with_two_processes_refuses_to_start():
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "arena_web",
        "worker",
        "-Q",
        "gpu.test",
        "-c",
        "2",
        "--pool",
        "prefork",
        "--without-mingle",
        "--without-gossip",
    ]
    env = os.environ | {"CELERY_BROKER_URL": "memory://", "CELERY_TASK_ALWAYS_EAGER": "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "worker refuses to start: concurrency is 2 on gpu.test" in done.stderr
