import gzip
import json
import math

import numpy as np
import pytest
import torch

from common.encoding.features import NN_AREA, NN_LEN, POLICY_LEN
from common.nn import katago_import
from common.nn.interpret import interpret, no_result_possible
from common.nn.katago_import import KataGoModelError, build_katago_model, read_katago_model
from common.nn.model import Model

G170 = "g170-b6c96-s175395328-d26788732"
COLUMNS = "ABCDEFGHJKLMNOPQRST"

# The tolerances the project must meet against KataGo's kata-raw-nn.
TOL_POLICY = 0.002
TOL_WINLOSS = 0.003
TOL_LEAD = 0.1
TOL_OWNERSHIP = 0.01


@pytest.fixture(scope="module")
def g170_path(shared):
    return shared / "models" / f"{G170}.bin.gz"


@pytest.fixture(scope="module")
def g170(g170_path):
    return read_katago_model(g170_path)


@pytest.fixture(scope="module")
def g170_model(g170_path):
    return build_katago_model(g170_path, device="cpu")


@pytest.fixture(scope="module")
def g170_bytes(g170_path):
    return gzip.decompress(g170_path.read_bytes())


def write_gz(path, data: bytes):
    path.write_bytes(gzip.compress(data, compresslevel=1))
    return path


# -- the real file ----------------------------------------------------------------------------


def test_g170_imports_with_the_architecture_of_its_info_file(g170, shared):
    info_text = (shared / "models" / f"{G170}-info.txt").read_text()
    info = json.loads(info_text[info_text.index("{") :])
    c = g170.config
    assert g170.name == G170 and g170.version == info["version"] == 8
    assert c.blocks == [kind for _, kind in info["block_kind"]]
    assert c.trunk_channels == info["trunk_num_channels"]
    assert c.mid_channels == info["mid_num_channels"]
    assert c.regular_channels == info["regular_num_channels"]
    assert c.gpool_channels == info["gpool_num_channels"]
    assert (c.p1_channels, c.g1_channels, c.v1_channels) == (
        info["p1_num_channels"],
        info["g1_num_channels"],
        info["v1_num_channels"],
    )
    assert c.v2_size == info["v2_size"]
    assert c.sbv2_channels == info["sbv2_num_channels"]
    assert (c.policy_channels, c.misc_values) == (1, 4)
    assert c.bn_epsilon == pytest.approx(1e-20)


def test_g170_every_layer_is_consumed_and_every_tensor_filled(g170):
    # 2 trunk input layers + 4 ordinary blocks * 6 + 2 gpool blocks * 10 + tip 2 + policy 9 + value 11
    assert len(g170.layers) == 2 + 4 * 6 + 2 * 10 + 2 + 9 + 11
    assert len(set(g170.layers)) == len(g170.layers)
    assert g170.layers[0] == "conv1" and g170.layers[-1] == "vownership/w"
    reference = Model(g170.config, initialize=False).state_dict()
    assert list(g170.state_dict) == list(reference)
    for key, value in reference.items():
        assert g170.state_dict[key].shape == value.shape, key
        assert g170.state_dict[key].dtype == torch.float32
    # fixup-trained: exported batch norms are mean 0, variance 1, scale only on the mid norms
    assert torch.all(g170.state_dict["blocks.0.norm1.running_mean"] == 0)
    assert torch.all(g170.state_dict["blocks.0.norm1.weight"] == 1)
    assert not torch.all(g170.state_dict["blocks.0.norm2.weight"] == 1)


def test_g170_forward_pass_runs(g170_model):
    spatial = torch.zeros(2, 22, NN_LEN, NN_LEN)
    spatial[0, 0] = 1.0
    spatial[1, 0, :9, :9] = 1.0
    with torch.no_grad():
        out = g170_model(spatial, torch.zeros(2, 19))
    assert out.policy.shape == (2, 1, POLICY_LEN)
    assert out.misc.shape == (2, 4)
    for key, value in out.tensors().items():
        assert torch.isfinite(value).all(), key


# -- against KataGo's own outputs -------------------------------------------------------------


def komi_wave(self_komi: float, area: int) -> float:
    """KataGo's komi parity triangle wave (nninputs.cpp fillRowV7, global input 18), area scoring."""
    if area % 2 == 0:
        floor = math.floor(self_komi / 2.0) * 2.0
    else:
        floor = math.floor((self_komi - 1.0) / 2.0) * 2.0 + 1.0
    delta = min(max(self_komi - floor, 0.0), 2.0)
    if delta < 0.5:
        return delta
    if delta < 1.5:
        return 1.0 - delta
    return delta - 2.0


def encode_simple_position(row: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs version 7 for a square board under area scoring without tax, written by hand.

    Only for positions where this is simple: at most a few moves, no passes, no captures, every
    stone with 4 liberties (so no liberty, ko or ladder features), no pass-alive regions. With area
    scoring and no tax, KataGo's area features (18, 19) mark every stone of each colour.
    """
    n, komi, rules, pla = row["size"], row["komi"], row["rules"], row["next_color"]
    assert rules["scoring"] == "AREA" and rules["tax"] == "NONE" and not rules["hasButton"]
    moves = row["moves"]
    assert len(moves) <= 2
    spatial = torch.zeros(1, 22, NN_LEN, NN_LEN)
    spatial[0, 0, :n, :n] = 1.0
    points = []
    for color, vertex in moves:
        x, y = COLUMNS.index(vertex[0]), n - int(vertex[1:])
        points.append((x, y))
        own = color == pla
        spatial[0, 1 if own else 2, y, x] = 1.0
        spatial[0, 18 if own else 19, y, x] = 1.0
    for i, (x, y) in enumerate(points):
        assert 0 < x < n - 1 and 0 < y < n - 1
        assert all(abs(x - a) + abs(y - b) > 1 for j, (a, b) in enumerate(points) if j != i)
    for back, (x, y) in enumerate(reversed(points)):
        spatial[0, 9 + back, y, x] = 1.0  # last move, then the one before
    g = torch.zeros(1, 19)
    self_komi = komi if pla == "W" else -komi
    g[0, 5] = self_komi / 20.0
    if rules["ko"] == "POSITIONAL":
        g[0, 6], g[0, 7] = 1.0, 0.5
    elif rules["ko"] == "SITUATIONAL":
        g[0, 6], g[0, 7] = 1.0, -0.5
    g[0, 8] = 1.0 if rules["suicide"] else 0.0
    g[0, 18] = komi_wave(self_komi, n * n)
    return spatial, g


def simple_golden_rows(shared) -> list[dict]:
    rows = [json.loads(line) for line in (shared / "golden" / "katago_rawnn_sample.jsonl").read_text().splitlines()]
    picked = [r for r in rows if len(r["moves"]) <= 2 and all(v != "pass" for _, v in r["moves"])]
    return picked


def test_golden_has_hand_encodable_positions(shared):
    rows = simple_golden_rows(shared)
    assert sum(1 for r in rows if not r["moves"]) >= 2
    assert len(rows) >= 4


def test_g170_matches_katago_raw_nn_on_simple_positions(shared, g170_model):
    rows = simple_golden_rows(shared)
    for row in rows:
        n = row["size"]
        spatial, global_inputs = encode_simple_position(row)
        k = row["katago_raw_nn"]
        legal = torch.zeros(1, POLICY_LEN, dtype=torch.bool)
        legal[0, NN_AREA] = True
        printed = torch.tensor([math.nan if p is None else p for p in k["policy"]]).view(n, n)
        grid = torch.zeros(NN_LEN, NN_LEN, dtype=torch.bool)
        grid[:n, :n] = ~torch.isnan(printed)
        legal[0, :NN_AREA] = grid.flatten()
        with torch.no_grad():
            out = g170_model(spatial, global_inputs)
        ev = interpret(
            out,
            legal,
            white_to_move=row["next_color"] == "W",
            no_result_allowed=no_result_possible(row["rules"]["ko"], row["rules"]["scoring"]),
            on_board=spatial[:, 0],
        )
        what = f"{n}x{n} komi {row['komi']} moves {row['moves']}"
        assert ev.white_win.item() == pytest.approx(k["whiteWin"], abs=TOL_WINLOSS), what
        assert ev.white_loss.item() == pytest.approx(k["whiteLoss"], abs=TOL_WINLOSS), what
        assert ev.no_result.item() == pytest.approx(k["noResult"], abs=TOL_WINLOSS), what
        assert ev.white_lead.item() == pytest.approx(k["whiteLead"], abs=TOL_LEAD), what
        assert ev.white_score_selfplay.item() == pytest.approx(k["whiteScoreSelfplay"], abs=TOL_LEAD), what
        assert ev.white_score_selfplay_sq.item() == pytest.approx(k["whiteScoreSelfplaySq"], rel=1e-3), what
        policy = ev.policy[0].view(NN_LEN, NN_LEN)[:n, :n]
        ok = ~torch.isnan(printed)
        assert (policy[ok] - printed[ok]).abs().max().item() <= TOL_POLICY, what
        assert torch.all(policy[~ok] == 0), what
        assert ev.policy_pass.item() == pytest.approx(k["policyPass"], abs=TOL_POLICY), what
        own = ev.white_ownership[0, :n, :n].flatten()
        assert (own - torch.tensor(k["whiteOwnership"])).abs().max().item() <= TOL_OWNERSHIP, what


# -- text variant -----------------------------------------------------------------------------


def test_txt_gz_variant_gives_the_same_weights(g170_path, g170, tmp_path, monkeypatch):
    spans = []
    original = katago_import._Reader.floats

    def recording(self, layer, count):
        start = self.pos
        values = original(self, layer, count)
        spans.append((start, self.pos, values))
        return values

    monkeypatch.setattr(katago_import._Reader, "floats", recording)
    read_katago_model(g170_path)
    monkeypatch.undo()
    data = gzip.decompress(g170_path.read_bytes())
    parts, last = [], 0
    for start, end, values in spans:
        parts.append(data[last:start])
        parts.append(("\n" + " ".join(repr(float(v)) for v in values) + "\n").encode())
        last = end
    parts.append(data[last:])
    txt = write_gz(tmp_path / "net.txt.gz", b"".join(parts))
    again = read_katago_model(txt)
    assert again.config == g170.config
    for key, value in g170.state_dict.items():
        assert torch.equal(again.state_dict[key], value), key


# -- malformed files --------------------------------------------------------------------------


def test_not_gzip_is_refused(tmp_path):
    path = tmp_path / "junk.bin.gz"
    path.write_bytes(b"this is not a model")
    with pytest.raises(KataGoModelError, match=r"junk\.bin\.gz.*not a valid gzip"):
        read_katago_model(path)


def test_truncated_gzip_is_refused(g170_path, tmp_path):
    raw = g170_path.read_bytes()
    path = tmp_path / "cut.bin.gz"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(KataGoModelError, match=r"cut\.bin\.gz.*gzip"):
        read_katago_model(path)


def test_truncated_weights_are_refused_naming_the_layer(g170_bytes, tmp_path):
    cut = g170_bytes.index(b"rconv3/w1b") + 200
    path = write_gz(tmp_path / "short.bin.gz", g170_bytes[:cut])
    with pytest.raises(KataGoModelError, match=r"short\.bin\.gz: layer 'rconv3/w1b': file ends inside the weights"):
        read_katago_model(path)


@pytest.mark.parametrize("version", [7, 9, 13])
def test_other_versions_are_refused_naming_those_read(g170_bytes, tmp_path, version):
    data = g170_bytes.replace(f"{G170}\n8\n".encode(), f"{G170}\n{version}\n".encode(), 1)
    path = write_gz(tmp_path / f"v{version}.bin.gz", data)
    message = rf"v{version}\.bin\.gz: header: model version {version} is not supported; versions 8, 10, 11, 12"
    with pytest.raises(KataGoModelError, match=message):
        read_katago_model(path)


def test_wrong_channel_count_is_refused_naming_the_layer(g170_bytes, tmp_path):
    data = g170_bytes.replace(b"rconv1/w1\n3\n3\n96\n96\n", b"rconv1/w1\n3\n3\n96\n95\n", 1)
    path = write_gz(tmp_path / "bad.bin.gz", data)
    with pytest.raises(KataGoModelError, match=r"layer 'rconv1/w1': conv is 96->95 channels, expected 96->96"):
        read_katago_model(path)


def test_unknown_block_kind_is_refused(g170_bytes, tmp_path):
    data = g170_bytes.replace(b"gpool_block\nrconv3", b"dilated_block\nrconv3", 1)
    path = write_gz(tmp_path / "dil.bin.gz", data)
    with pytest.raises(KataGoModelError, match=r"layer 'rconv3': block kind 'dilated_block' is not supported"):
        read_katago_model(path)


def test_non_finite_weight_is_refused(g170_bytes, tmp_path):
    at = g170_bytes.index(b"@BIN@", g170_bytes.index(b"v2/b")) + 5
    data = g170_bytes[:at] + np.array([np.nan], dtype="<f4").tobytes() + g170_bytes[at + 4 :]
    path = write_gz(tmp_path / "nan.bin.gz", data)
    with pytest.raises(KataGoModelError, match=r"layer 'v2/b': weight 0 of 64 is NaN"):
        read_katago_model(path)


def test_trailing_data_is_refused(g170_bytes, tmp_path):
    path = write_gz(tmp_path / "extra.bin.gz", g170_bytes + b"moredata\n")
    with pytest.raises(KataGoModelError, match=r"unexpected bytes after the value head"):
        read_katago_model(path)


def test_binary_data_read_as_text_is_refused(g170_bytes, tmp_path):
    path = write_gz(tmp_path / "really_binary.txt.gz", g170_bytes)
    with pytest.raises(KataGoModelError, match=r"really_binary\.txt\.gz: layer 'conv1'"):
        read_katago_model(path)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(KataGoModelError, match="cannot read the file"):
        read_katago_model(tmp_path / "absent.bin.gz")
