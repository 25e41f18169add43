import hashlib
import json
import struct

import pytest
import safetensors.torch
import torch

from common.encoding.features import NN_LEN
from common.nn.katago_import import build_katago_model
from common.nn.model import Model, board_mask, named_config
from common.nn.modelfile import (
    FORMAT,
    FORMAT_VERSION,
    ModelFileError,
    decode_model,
    file_sha256,
    load_model,
    read_model_file,
    save_model,
)

from .test_model import random_inputs, random_model

SIZES = [(9, 9), (13, 13), (19, 19), (7, 11)]


def metadata_of(path) -> dict:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n])["__metadata__"]


def write_raw(path, tensors: dict, metadata: dict) -> None:
    path.write_bytes(safetensors.torch.save(tensors, metadata=metadata))


def good_metadata(config, name="net") -> dict:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "config": json.dumps(config.to_dict()),
    }


def outputs_equal(a, b) -> bool:
    return all(torch.equal(value, getattr(b, k)) for k, value in a.tensors().items())


@pytest.fixture
def saved(tmp_path):
    model = random_model(seed=11)
    path = tmp_path / "net.safetensors"
    digest = save_model(model, path, "tiny-test-1")
    return model, path, digest


def test_round_trip_is_bit_identical(saved):
    model, path, _ = saved
    loaded, info = load_model(path, device="cpu")
    assert info.name == "tiny-test-1"
    assert info.config == model.config
    assert not loaded.training
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
    spatial, global_inputs = random_inputs(SIZES)
    with torch.no_grad():
        assert outputs_equal(model(spatial, global_inputs), loaded(spatial, global_inputs))


def test_identity_is_the_sha256_of_the_file(saved):
    _, path, digest = saved
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest() == file_sha256(path)
    assert read_model_file(path).sha256 == digest
    meta = metadata_of(path)
    assert meta["format"] == "sente-model" and meta["format_version"] == "1"
    assert meta["name"] == "tiny-test-1"
    assert json.loads(meta["config"]) == named_config("tiny").to_dict()


def test_save_is_atomic_and_overwrites(saved, tmp_path):
    _, path, first = saved
    other = random_model(seed=12)
    second = save_model(other, path, "tiny-test-2")
    assert second != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.safetensors"]  # no temporary files left
    assert read_model_file(path).name == "tiny-test-2"


def test_failed_save_leaves_nothing_behind(tmp_path):
    model = random_model()
    with pytest.raises(ModelFileError, match="name"):
        save_model(model, tmp_path / "x.safetensors", "  ")
    assert list(tmp_path.iterdir()) == []


def test_imported_katago_net_round_trips(shared, tmp_path):
    model = build_katago_model(shared / "models" / "g170-b6c96-s175395328-d26788732.bin.gz", device="cpu")
    path = tmp_path / "g170.safetensors"
    save_model(model, path, "g170-b6c96")
    loaded, info = load_model(path, device="cpu")
    assert info.config.policy_channels == 1
    spatial = torch.zeros(2, 22, NN_LEN, NN_LEN)
    spatial[:, 0] = board_mask([(19, 19), (9, 9)])
    with torch.no_grad():
        assert outputs_equal(model(spatial, torch.zeros(2, 19)), loaded(spatial, torch.zeros(2, 19)))


# -- refused files --------------------------------------------------------------------------


def test_truncated_file_is_refused(saved, tmp_path):
    _, path, _ = saved
    data = path.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: len(data) - 100])
    with pytest.raises(ModelFileError, match=r"cut\.safetensors: size .* truncated"):
        read_model_file(cut)
    cut.write_bytes(data[:20])
    with pytest.raises(ModelFileError, match=r"cut\.safetensors: not a safetensors file .*truncated"):
        read_model_file(cut)


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x03\x04" + b"\x00" * 100, b'{"a": 1}' * 10])
def test_not_a_safetensors_file_is_refused(tmp_path, content):
    path = tmp_path / "junk.safetensors"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match=r"junk\.safetensors: not a safetensors file"):
        read_model_file(path)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(ModelFileError, match="cannot read it"):
        read_model_file(tmp_path / "absent.safetensors")
    with pytest.raises(ModelFileError, match="cannot read it"):
        file_sha256(tmp_path / "absent.safetensors")


def test_wrong_tensor_shape_is_refused_naming_it(tmp_path):
    model = random_model()
    tensors = dict(model.state_dict())
    tensors["blocks.0.conv1.weight"] = torch.zeros(16, 16, 5, 5)
    path = tmp_path / "shape.safetensors"
    write_raw(path, tensors, good_metadata(model.config))
    with pytest.raises(ModelFileError, match=r"tensor blocks\.0\.conv1\.weight has shape \[16, 16, 5, 5\]"):
        read_model_file(path)


def test_config_not_matching_the_tensors_is_refused(tmp_path):
    model = random_model()
    path = tmp_path / "cfg.safetensors"
    write_raw(path, dict(model.state_dict()), good_metadata(named_config("b6c96")))
    with pytest.raises(ModelFileError, match="do not match its config: missing tensors"):
        read_model_file(path)
    bigger = named_config("tiny")
    bigger.v2_size = 20
    write_raw(path, dict(model.state_dict()), good_metadata(bigger))
    with pytest.raises(ModelFileError, match=r"tensor value_head\.linear_v2\.weight has shape"):
        read_model_file(path)


def test_missing_and_extra_tensors_are_refused(tmp_path):
    model = random_model()
    tensors = dict(model.state_dict())
    del tensors["norm_trunk.running_var"]
    tensors["stray"] = torch.zeros(3)
    path = tmp_path / "names.safetensors"
    write_raw(path, tensors, good_metadata(model.config))
    expected = r"missing tensors \['norm_trunk\.running_var'\]; unexpected tensors \['stray'\]"
    with pytest.raises(ModelFileError, match=expected):
        read_model_file(path)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format": "other"}, "format is 'other'"),
        ({"format_version": "2"}, "format_version '2' is not supported"),
        ({"name": ""}, "no network name"),
        ({"config": "{not json"}, "config is not valid JSON"),
        ({"config": json.dumps({"blocks": ["regular"]})}, "bad config: model config: missing keys"),
    ],
)
def test_bad_metadata_is_refused(tmp_path, change, message):
    model = random_model()
    path = tmp_path / "meta.safetensors"
    write_raw(path, dict(model.state_dict()), good_metadata(model.config) | change)
    with pytest.raises(ModelFileError, match=message):
        read_model_file(path)


def test_file_without_metadata_is_refused(tmp_path):
    path = tmp_path / "plain.safetensors"
    path.write_bytes(safetensors.torch.save({"a": torch.zeros(2)}))
    with pytest.raises(ModelFileError, match="no metadata"):
        read_model_file(path)


def test_wrong_dtype_and_non_finite_values_are_refused(tmp_path):
    model = random_model()
    tensors = dict(model.state_dict())
    tensors["linear_global.weight"] = tensors["linear_global.weight"].double()
    path = tmp_path / "dtype.safetensors"
    write_raw(path, tensors, good_metadata(model.config))
    with pytest.raises(ModelFileError, match=r"linear_global\.weight is torch\.float64"):
        read_model_file(path)
    tensors = dict(model.state_dict())
    tensors["linear_global.weight"] = tensors["linear_global.weight"].clone()
    tensors["linear_global.weight"][0, 0] = float("nan")
    write_raw(path, tensors, good_metadata(model.config))
    with pytest.raises(ModelFileError, match=r"linear_global\.weight contains NaN"):
        decode_model(path.read_bytes(), path)


def test_fresh_model_of_every_small_size_saves_and_loads(tmp_path):
    for name in ("tiny", "b3c32", "b4c48", "b6c96", "tinynbt", "b4c48nbt", "b6c96nbt", "tinymobile", "b17c64mobile"):
        model = Model(named_config(name)).eval()
        path = tmp_path / f"{name}.safetensors"
        save_model(model, path, name)
        loaded, _ = load_model(path, device="cpu")
        for key, value in model.state_dict().items():
            assert torch.equal(loaded.state_dict()[key], value)
