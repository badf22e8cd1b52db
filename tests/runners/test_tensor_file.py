"""runners.tensor_file: what the engine's processes hand each other, and what a forged file
the candidate wrote gets (an UnreadableFile before any tensor is read)."""

import json
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from runners import tensor_file
from runners.tensor_file import UnreadableFile


def written(tmp_path, value, name="value.tensors"):
    path = tmp_path / name
    tensor_file.save(value, path)
    return path


def test_values_come_back_with_their_dtypes_shapes_and_strides(tmp_path):
    x = torch.randn(5, 7)
    value = [
        [x, x.t(), x[:, 1:3], x.expand(2, 5, 7), torch.tensor(3.5), torch.zeros(0, 3)],
        {"weight": torch.ones(2, dtype=torch.bfloat16), "n": 3},
        (1, 2.5, None, "name", True),
        torch.randn(4).to(torch.float8_e4m3fn),
        torch.tensor([1 + 2j]),
        torch.tensor([True, False]),
        torch.arange(6, dtype=torch.int64).reshape(2, 3),
    ]
    back = tensor_file.load(written(tmp_path, value), "cpu")

    tensors, mapping, scalars, fp8, complex_, flags, ints = back
    assert torch.equal(tensors[0], x) and tensors[1].stride() == x.t().stride()  # a transpose
    assert torch.equal(tensors[1], x.t()) and torch.equal(tensors[2], x[:, 1:3])
    assert torch.equal(tensors[3], x.expand(2, 5, 7)) and tensors[3].stride() == (0, 7, 1)
    assert tensors[2].is_contiguous()  # a slice of a larger buffer: written without the rest
    assert tensors[4].shape == () and float(tensors[4]) == 3.5 and tensors[5].shape == (0, 3)
    assert mapping["weight"].dtype == torch.bfloat16 and mapping["n"] == 3
    assert scalars == (1, 2.5, None, "name", True)
    assert fp8.dtype == torch.float8_e4m3fn and torch.equal(fp8.float(), value[3].float())
    assert torch.equal(complex_, value[4]) and torch.equal(flags, value[5])
    assert torch.equal(ints, value[6])


def test_a_tensor_named_twice_comes_back_once_and_views_are_resolved(tmp_path):
    x = torch.randn(3, dtype=torch.complex64)
    scale = torch.ones(4).to(torch.float8_e8m0fnu)
    back = tensor_file.load(written(tmp_path, [x, x, x.conj(), -x.conj(), scale]), "cpu")

    assert back[0] is back[1] and torch.equal(back[0], x)
    assert torch.equal(back[2], x.conj().resolve_conj()) and not back[2].is_conj()
    assert torch.equal(back[3], (-x.conj()).resolve_conj())
    assert back[4].dtype == torch.float8_e8m0fnu and torch.equal(back[4].float(), torch.ones(4))


def test_select_reads_only_the_chosen_items(tmp_path):
    path = written(tmp_path, [torch.ones(3), torch.zeros(2), 7])
    first, second, third = tensor_file.load(path, "cpu", select={1})
    assert first is None and third is None and torch.equal(second, torch.zeros(2))
    with pytest.raises(UnreadableFile):
        tensor_file.load(written(tmp_path, {"a": 1}, "dict.tensors"), "cpu", select={0})


def test_unsaveable_values_are_named(tmp_path):
    assert tensor_file.cannot_save(torch.ones(2).to_sparse()) == "not a dense tensor"
    assert tensor_file.cannot_save(torch.ones(2)) is None
    with pytest.raises(TypeError, match="not a dense tensor"):
        tensor_file.save([torch.ones(2).to_sparse()], tmp_path / "sparse.tensors")
    with pytest.raises(TypeError, match="object"):
        tensor_file.save([object()], tmp_path / "object.tensors")


def forged(tmp_path, header: dict, data: bytes = b"") -> os.PathLike:
    raw = json.dumps(header).encode()
    path = tmp_path / "forged.tensors"
    padding = b"\0" * (-(16 + len(raw)) % tensor_file.ALIGN)
    path.write_bytes(tensor_file.MAGIC + struct.pack("<Q", len(raw)) + raw + padding + data)
    return path


ENTRY = {"dtype": "float32", "shape": [2], "stride": [1], "device": "gpu", "offset": 0, "nbytes": 8}


@pytest.mark.parametrize(
    "entry",
    [
        {**ENTRY, "dtype": "object"},
        {**ENTRY, "shape": [1 << 30], "nbytes": 4 << 30},  # more bytes than the file holds
        {**ENTRY, "nbytes": 12},  # not what the shape and dtype take
        {**ENTRY, "offset": -8},
        {**ENTRY, "shape": [2.0]},
        {**ENTRY, "stride": [1, 1]},
        {**ENTRY, "stride": [1 << 40]},  # strides reaching past the bytes
        {**ENTRY, "stride": [0]},  # a broadcast of one element named as two elements of bytes
        {key: value for key, value in ENTRY.items() if key != "device"},
        {**ENTRY, "dtype": ["float32"]},
        {**ENTRY, "shape": [0, 1 << 70], "stride": [1, 1], "nbytes": 0},
    ],
)
def test_a_forged_entry_is_unreadable(tmp_path, entry):
    path = forged(tmp_path, {"tree": {"t": 0}, "tensors": [entry]}, b"\0" * 8)
    with pytest.raises(UnreadableFile):
        tensor_file.load(path, "cpu", untrusted=True)


def test_forged_files_cannot_make_the_reader_hold_more_than_they_do(tmp_path):
    """A tensor named many times is read once; entries sharing bytes and a file over the
    caller's bound (a sparse one too) are refused before any tensor is read."""
    many = forged(tmp_path, {"tree": {"l": [{"t": 0}] * 2000}, "tensors": [ENTRY]}, b"\0" * 8)
    back = tensor_file.load(many, "cpu", untrusted=True)
    assert len(back) == 2000 and all(item is back[0] for item in back)
    shared = {"tree": {"l": [{"t": 0}, {"t": 1}]}, "tensors": [ENTRY, ENTRY]}
    with pytest.raises(UnreadableFile, match="overlap"):
        tensor_file.load(forged(tmp_path, shared, b"\0" * 8), "cpu", untrusted=True)
    big = {**ENTRY, "shape": [1 << 28], "nbytes": 1 << 30}
    sparse = forged(tmp_path, {"tree": {"t": 0}, "tensors": [big]})
    with sparse.open("r+b") as handle:
        handle.truncate(sparse.stat().st_size + (1 << 30))  # a gigabyte that holds no page
    with pytest.raises(UnreadableFile, match="over"):
        tensor_file.load(sparse, "cpu", untrusted=True, max_bytes=1 << 20)
    path = written(tmp_path, [torch.ones(1000)])
    assert tensor_file.data_bytes(path) == 4000
    # a broadcast of one element counts all of its elements: using it costs them all
    broadcast = {**ENTRY, "shape": [1 << 30], "stride": [0], "nbytes": 4}
    wide = forged(tmp_path, {"tree": {"t": 0}, "tensors": [broadcast]}, b"\0" * 8)
    assert tensor_file.data_bytes(wide) == 4 << 30
    with pytest.raises(UnreadableFile, match="over"):
        tensor_file.load(wide, "cpu", untrusted=True, max_bytes=1 << 20)
    deep = {**ENTRY, "shape": [1] * 65, "stride": [1] * 65, "nbytes": 4}
    with pytest.raises(UnreadableFile, match="out of range"):
        tensor_file.load(forged(tmp_path, {"tree": None, "tensors": [deep]}), "cpu", untrusted=True)
    with pytest.raises(UnreadableFile, match="over 3999"):
        tensor_file.load(path, "cpu", untrusted=True, max_bytes=3999)


def test_a_forged_header_or_file_is_unreadable(tmp_path):
    cases = [
        {"tree": {"t": 1}, "tensors": [ENTRY]},  # a tensor the table does not have
        {"tree": {"x": []}, "tensors": []},
        {"tree": {"d": [[1, 2]]}, "tensors": []},  # a key that is not a string
        {"tree": None},
    ]
    for header in cases:
        with pytest.raises(UnreadableFile):
            tensor_file.load(forged(tmp_path, header, b"\0" * 8), "cpu", untrusted=True)
    deep = tmp_path / "deep.tensors"
    raw = b'{"tree": ' + b"[" * 100_000 + b"]" * 100_000 + b', "tensors": []}'
    deep.write_bytes(tensor_file.MAGIC + struct.pack("<Q", len(raw)) + raw)
    huge = tmp_path / "huge.tensors"
    huge.write_bytes(tensor_file.MAGIC + struct.pack("<Q", 1 << 40))
    archive = tmp_path / "archive.pt"
    torch.save([torch.ones(2)], archive)
    truncated = tmp_path / "truncated.tensors"
    truncated.write_bytes(written(tmp_path, [torch.ones(1000)]).read_bytes()[:-8])
    for path in (deep, huge, archive, truncated):
        with pytest.raises(UnreadableFile):
            tensor_file.load(path, "cpu", untrusted=True)


def test_an_untrusted_link_or_fifo_is_not_followed(tmp_path):
    link = tmp_path / "link.tensors"
    link.symlink_to(written(tmp_path, [torch.ones(2)]))
    fifo = tmp_path / "fifo.tensors"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        tensor_file.load(link, "cpu", untrusted=True)
    with pytest.raises(UnreadableFile):
        tensor_file.load(fifo, "cpu", untrusted=True)
    assert tensor_file.load(link, "cpu")[0].shape == (2,)  # the engine's own files: followed


def test_each_thread_stages_through_a_buffer_of_its_own():
    """Threads that load at once (bench/deck_gpu.py grades failing controls side by side) must
    not share the chunk buffer between the file and the device."""
    stages = set()
    with ThreadPoolExecutor(2) as pool:
        barrier = threading.Barrier(2)

        def stage():
            barrier.wait()  # both threads alive at once: two threads, not one reused
            return tensor_file._stage().data_ptr()

        stages.update(pool.map(lambda _: stage(), range(2)))
    assert len(stages) == 2
    assert tensor_file._stage().data_ptr() == tensor_file._stage().data_ptr()  # kept per thread


def test_a_file_already_there_is_written_over_and_cut_to_its_length(tmp_path):
    path = written(tmp_path, [torch.arange(100_000, dtype=torch.float64)])
    inode = path.stat().st_ino
    tensor_file.save([torch.ones(3)], path)

    assert path.stat().st_ino == inode  # the same file, its pages reused
    assert torch.equal(tensor_file.load(path, "cpu", untrusted=True)[0], torch.ones(3))
    assert path.stat().st_size < 4096
