import pytest
from django.core.management import call_command

from submissions.models import HardwareTarget, Harness, LanguageModel
from submissions.services.registry import EXAMPLE_HARDWARE, EXAMPLE_HARNESSES, EXAMPLE_MODELS

pytestmark = pytest.mark.django_db


def test_the_cpu_target_exists_after_migrating_and_is_never_ranked():
    cpu = HardwareTarget.objects.get(slug="cpu")
    assert (cpu.queue_name, cpu.device, cpu.is_ranked) == ("cpu", "cpu", False)


def test_seed_registry_registers_examples_and_can_run_twice():
    call_command("seed_registry")
    call_command("seed_registry")

    assert LanguageModel.objects.count() == len(EXAMPLE_MODELS)
    assert Harness.objects.count() == len(EXAMPLE_HARNESSES)
    assert HardwareTarget.objects.count() == len(EXAMPLE_HARDWARE) + 1
    h100 = HardwareTarget.objects.get(slug="h100-sxm")
    assert (h100.queue_name, h100.device, h100.is_ranked) == ("gpu.h100-sxm", "cuda", True)


def test_seeded_gpu_models_are_keys_of_the_engine_hardware_table():
    from runners import hardware

    call_command("seed_registry")
    known = {row.slug for row in hardware.TABLE}
    assert (
        set(HardwareTarget.objects.exclude(device="cpu").values_list("gpu_model", flat=True))
        <= known
    )
