"""A worker refuses to start with settings that would lose or duplicate evaluations."""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from django.conf import settings

from arena_web.celery import app
from submissions.worker_checks import (
    UnsafeWorkerConfig,
    delivery_problems,
    gpu_problems,
    hold_gpu,
    parse_gpu_list,
    pinned_gpu,
)

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


SMI_LIST = """GPU 0: NVIDIA H200 (UUID: GPU-aaaa0000-0000-0000-0000-000000000000)
GPU 1: NVIDIA H200 (UUID: GPU-bbbb1111-1111-1111-1111-111111111111)
"""
TWO_GPUS = parse_gpu_list(SMI_LIST)


def test_the_host_gpu_list_is_read_in_index_order():
    assert TWO_GPUS == [
        "GPU-aaaa0000-0000-0000-0000-000000000000",
        "GPU-bbbb1111-1111-1111-1111-111111111111",
    ]
    assert parse_gpu_list("No devices were found\n") == []


@pytest.mark.parametrize(
    ("visible", "host", "expected"),
    [
        ("1", TWO_GPUS, []),
        (None, TWO_GPUS[:1], []),  # a single-GPU host needs no pinning
        (None, [], []),
        (None, TWO_GPUS, ["CUDA_VISIBLE_DEVICES is unset on a host with 2 GPUs"]),
        ("0,1", TWO_GPUS, ["CUDA_VISIBLE_DEVICES='0,1' names 2 GPUs, not one"]),
        ("", TWO_GPUS, ["CUDA_VISIBLE_DEVICES='' names 0 GPUs, not one"]),
    ],
)
def test_a_gpu_worker_must_be_pinned_to_one_gpu(visible, host, expected):
    found = gpu_problems(queues=["gpu.h200"], visible=visible, host_gpus=host)
    assert [problem.split(":")[0] for problem in found] == expected


def test_cpu_workers_need_no_gpu():
    assert gpu_problems(queues=["cpu"], visible=None, host_gpus=TWO_GPUS) == []


def test_a_worker_names_its_gpu_by_uuid_when_the_host_lists_it():
    assert pinned_gpu(visible="1", gpus=TWO_GPUS) == TWO_GPUS[1]
    assert pinned_gpu(visible=TWO_GPUS[0], gpus=TWO_GPUS) == TWO_GPUS[0]
    assert pinned_gpu(visible=None, gpus=[]) == "0"


def test_a_second_worker_on_a_held_gpu_is_refused_until_the_first_lets_go(tmp_path):
    first = hold_gpu(TWO_GPUS[0], lock_dir=tmp_path)
    with pytest.raises(UnsafeWorkerConfig, match=f"already held .* \\(pid {os.getpid()}\\)"):
        hold_gpu(TWO_GPUS[0], lock_dir=tmp_path)
    other = hold_gpu(TWO_GPUS[1], lock_dir=tmp_path)  # another GPU of the host is free
    first.close()
    hold_gpu(TWO_GPUS[0], lock_dir=tmp_path).close()
    other.close()


def test_a_gpu_worker_whose_gpu_another_worker_holds_refuses_to_start(tmp_path):
    held = hold_gpu("0", lock_dir=tmp_path)
    command = [sys.executable, "-m", "celery", "-A", "arena_web", "worker", "-Q", "gpu.test"]
    command += ["-c", "1", "--pool", "solo", "--without-mingle", "--without-gossip"]
    env = os.environ | {
        "CELERY_BROKER_URL": "memory://",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CUDA_VISIBLE_DEVICES": "0",
        "ARENA_GPU_LOCK_DIR": str(tmp_path),
        "PATH": "/usr/bin:/bin",  # no nvidia-smi: the GPU is named by its index
    }
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    held.close()
    assert done.returncode != 0
    assert "worker refuses to start: GPU 0 is already held by another worker" in done.stderr
