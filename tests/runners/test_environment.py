"""The grade's environment names the GPU that graded it, on a host of several GPUs too."""

from types import SimpleNamespace

from runners.environment import describe, gpu_uuid


def test_the_gpu_is_named_by_the_uuid_nvidia_smi_uses():
    props = SimpleNamespace(uuid="3f2a9c1e-0000-4000-8000-00000000abcd")
    assert gpu_uuid(props) == "GPU-3f2a9c1e-0000-4000-8000-00000000abcd"
    assert gpu_uuid(SimpleNamespace(uuid="GPU-1234")) == "GPU-1234"


def test_a_torch_without_uuids_names_none():
    assert gpu_uuid(SimpleNamespace()) is None


def test_the_cpu_environment_has_no_gpu():
    env = describe("cpu")
    assert env["gpu"] is None and "gpu_uuid" not in env
