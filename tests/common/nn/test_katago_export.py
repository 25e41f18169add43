"""Export to KataGo's model format: round trips through our importer, and, when ``SENTE_KATAGO``
names a KataGo binary, KataGo's own raw outputs of the exported files against ours."""

import dataclasses
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.architecture import ModelConfig, named_config
from common.nn.katago_export import (
    KataGoExportError,
    export_version,
    exported_misc_values,
    exported_policy_channels,
    katago_model_bytes,
    write_katago_model,
)
from common.nn.katago_import import KataGoModelError, read_katago_model
from common.nn.model import Model
from common.nn.modelfile import save_model
from tests.common.nn.nets import random_inputs, random_model

G170 = "g170-b6c96-s175395328-d26788732"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def g170(shared):
    return read_katago_model(shared / "models" / f"{G170}.bin.gz")


def test_g170_round_trip_gives_every_weight_back(g170, tmp_path):
    path = tmp_path / "g170.bin.gz"
    write_katago_model(path, g170.config, g170.state_dict, g170.name)
    again = read_katago_model(path)
    assert again.name == G170 and again.version == 8
    assert again.config == g170.config
    assert again.layers == g170.layers  # KataGo's own layer names, in its order
    for key, value in g170.state_dict.items():
        assert torch.equal(again.state_dict[key], value), key


def test_export_is_reproducible_bytes(g170):
    first = katago_model_bytes(g170.config, g170.state_dict, g170.name)
    assert first == katago_model_bytes(g170.config, g170.state_dict, g170.name)
    assert gzip.decompress(first).startswith(f"{G170}\n8\n22\n19\ntrunk\n".encode())


def test_each_network_is_exported_as_the_oldest_version_that_holds_its_heads():
    tiny = named_config("tiny")
    assert (
        export_version(tiny) == 8
        and exported_policy_channels(tiny) == [0]
        and exported_misc_values(tiny) == [0, 1, 2, 3]
    )
    errors_only = dataclasses.replace(tiny, misc_values=14)
    assert export_version(errors_only) == 10 and exported_misc_values(errors_only) == [0, 1, 2, 3, 8, 9]
    heads = named_config("tinynbt")
    assert export_version(heads) == 12 and exported_policy_channels(heads) == [0, 4]
    text = gzip.decompress(katago_model_bytes(heads, random_model(1, heads).state_dict(), "net"))
    assert text.startswith(b"net\n12\n22\n19\ntrunk\n") and b"trunk/actv\nACTIVATION_RELU\n" in text
    assert b"norm_trunk_bn" not in text and text.count(b"policyhead") == 1  # the training-only heads stay out


SIZES = ["tiny", "b3c32", "b4c48", "b6c96", "tinynbt", "b4c48nbt", "b6c96nbt"]
EXPORTED = {  # what each size's file carries: (our policy channels, our misc columns)
    "tiny": ([0], [0, 1, 2, 3]),
    "b3c32": ([0], [0, 1, 2, 3]),
    "b4c48": ([0], [0, 1, 2, 3]),
    "b6c96": ([0], [0, 1, 2, 3]),
    "tinynbt": ([0, 4], [0, 1, 2, 3, 8, 9]),
    "b4c48nbt": ([0, 4], [0, 1, 2, 3, 8, 9]),
    "b6c96nbt": ([0, 4], [0, 1, 2, 3, 8, 9]),
}


@pytest.mark.parametrize("size", SIZES)
def test_our_network_exported_and_read_back_gives_the_same_raw_outputs(size, tmp_path):
    model = random_model(3, named_config(size))
    path = tmp_path / f"{size}.bin.gz"
    write_katago_model(path, model.config, model.state_dict(), f"sente-{size}")
    imported = read_katago_model(path)
    assert imported.version == export_version(model.config)
    assert imported.config.blocks == model.config.blocks
    assert imported.config.bottleneck_channels == model.config.bottleneck_channels
    widths = ("trunk_channels", "mid_channels", "regular_channels", "gpool_channels", "p1_channels", "g1_channels")
    for width in (*widths, "v1_channels", "v2_size"):
        assert getattr(imported.config, width) == getattr(model.config, width), width
    back = Model(imported.config, initialize=False)
    back.load_state_dict(imported.state_dict)
    back.eval()
    spatial, global_inputs = random_inputs([(9, 9), (13, 13), (19, 19), (7, 11)], seed=5)
    with torch.no_grad():
        ours, theirs = model(spatial, global_inputs), back(spatial, global_inputs)
    # What the file carries: the policies KataGo reads, the value, the misc values it reads, ownership.
    policy, misc = EXPORTED[size]
    assert theirs.policy.shape[1] == max(policy) + 1 and theirs.misc.shape[1] >= max(misc) + 1
    torch.testing.assert_close(theirs.policy[:, policy], ours.policy[:, policy], rtol=0, atol=1e-5)
    torch.testing.assert_close(theirs.value, ours.value, rtol=0, atol=1e-5)
    torch.testing.assert_close(theirs.misc[:, misc], ours.misc[:, misc], rtol=0, atol=1e-5)
    torch.testing.assert_close(theirs.ownership, ours.ownership, rtol=0, atol=1e-5)
    others = [c for c in range(theirs.policy.shape[1]) if c not in policy]
    assert torch.all(back.policy_head.conv_p2.weight[others] == 0)  # what the file lacks comes in as zero
    assert ours.policy[:, 0].std() > 0.05 and ours.ownership.std() > 0.02  # outputs that differ by position


def test_a_nested_block_holding_an_unknown_kind_is_refused_by_name(tmp_path):
    model = random_model(2, named_config("tinynbt"))
    text = gzip.decompress(katago_model_bytes(model.config, model.state_dict(), "net"))
    assert text.count(b"gpool_block\nrconv2/blockstack/0\n") == 1
    path = tmp_path / "bad.bin.gz"
    path.write_bytes(
        gzip.compress(text.replace(b"gpool_block\nrconv2/blockstack/0", b"dilated_block\nrconv2/blockstack/0"))
    )
    with pytest.raises(KataGoModelError, match=r"layer 'rconv2': inner block 0 is 'dilated_block'"):
        read_katago_model(path)


def test_an_activation_other_than_relu_is_refused_by_name(tmp_path):
    model = random_model(2, named_config("tinynbt"))
    text = gzip.decompress(katago_model_bytes(model.config, model.state_dict(), "net"))
    path = tmp_path / "mish.bin.gz"
    path.write_bytes(gzip.compress(text.replace(b"trunk/actv\nACTIVATION_RELU", b"trunk/actv\nACTIVATION_MISH")))
    with pytest.raises(KataGoModelError, match=r"layer 'trunk/actv': activation 'ACTIVATION_MISH' is not supported"):
        read_katago_model(path)


def test_names_with_spaces_become_one_token(g170):
    data = gzip.decompress(katago_model_bytes(g170.config, g170.state_dict, "my  net\tv2"))
    assert data.startswith(b"my_net_v2\n8\n")


def test_an_architecture_without_a_version_8_equivalent_is_refused():
    config = ModelConfig.from_dict({**named_config("tiny").to_dict(), "regular_channels": 16})
    model = Model(config)
    with pytest.raises(KataGoExportError, match=r"mid_channels \(16\) larger than regular_channels \(16\)"):
        katago_model_bytes(config, model.state_dict(), "net")


def test_a_mobile_network_is_refused_naming_why():
    model = Model(named_config("tinymobile"))
    with pytest.raises(KataGoExportError, match="no MobileNet blocks"):
        katago_model_bytes(model.config, model.state_dict(), "net")


def run_client(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "client", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_export_command_writes_a_file_our_importer_and_the_name_agree_on(tmp_path):
    model = random_model(1, named_config("tiny"))
    net = tmp_path / "net.safetensors"
    save_model(model, net, "sente-tiny-7")
    out = tmp_path / "out" / "net.bin.gz"
    done = run_client("export-katago", str(net), str(out))
    assert done.returncode == 0, done.stderr
    assert "KataGo model version 8" in done.stdout and "'sente-tiny-7'" in done.stdout
    assert read_katago_model(out).name == "sente-tiny-7"


def test_export_command_refuses_bad_input_and_names_it(tmp_path):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a network")
    done = run_client("export-katago", str(junk), str(tmp_path / "x.bin.gz"))
    assert done.returncode == 1 and str(junk) in done.stderr and "Traceback" not in done.stderr
    done = run_client("export-katago", str(junk), str(tmp_path / "x.safetensors"))
    assert done.returncode == 1 and "x.safetensors" in done.stderr and ".bin.gz" in done.stderr
    assert not (tmp_path / "x.bin.gz").exists()


# -- KataGo itself ------------------------------------------------------------------------------

KATAGO = os.environ.get("SENTE_KATAGO")
needs_katago = pytest.mark.skipif(not KATAGO, reason="SENTE_KATAGO does not name a KataGo binary")
# Positions (9x9, Tromp-Taylor) as GTP moves from the empty board, kept apart from those the
# importer's golden outputs cover.
POSITIONS = [
    [],
    ["B E5"],
    ["B C3", "W G7", "B C7", "W G3", "B E5"],
    ["B E5", "W E4", "B D4", "W F5", "B F4", "W D5", "B E3", "W pass"],
]


class Gtp:
    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def ask(self, command: str) -> str:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                assert self.proc.stderr
                raise AssertionError(f"the engine ended while answering {command!r}: {self.proc.stderr.read()[-2000:]}")
            if line.strip() == "" and lines:
                break
            if line.strip():
                lines.append(line.rstrip("\n"))
        answer = "\n".join(lines)
        assert answer.startswith("="), f"{command!r}: {answer}"
        return answer[1:].strip()

    def close(self) -> None:
        """End the engine (closing its input ends both engines' GTP loops)."""
        assert self.proc.stdin
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def raw_nn(text: str) -> dict[str, list[float]]:
    """kata-raw-nn's answer as name -> numbers (NAN for illegal points kept as nan)."""
    out: dict[str, list[float]] = {}
    key = ""
    for line in text.splitlines():
        words = line.split()
        if words and not _number(words[0]):
            key = words[0]
            out[key] = [float(w) for w in words[1:]]
        else:
            out[key].extend(float(w) for w in words)
    return out


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def compare_in_katago(ours: Path, exported: Path, work: Path, optimism: float = 0.0) -> None:
    """KataGo's kata-raw-nn of ``exported`` against ours of ``ours``; KataGo mixes the optimistic
    policy into the one it prints by ``optimism`` (its GTP's default is 0.2 at the root)."""
    cfg = work / "gtp.cfg"
    keys = {
        "logDir": work,
        "logAllGTPCommunication": "false",
        "logSearchInfo": "false",
        "rules": "tromp-taylor",
        "numSearchThreads": 1,
        "policyOptimism": optimism,
        "rootPolicyOptimism": optimism,
    }
    cfg.write_text("".join(f"{key} = {value}\n" for key, value in keys.items()))
    katago = Gtp([KATAGO, "gtp", "-model", str(exported), "-config", str(cfg)], work)
    sente = Gtp([sys.executable, "-m", "client", "gtp", "--model", str(ours), "--device", "cpu"], ROOT)
    try:
        for moves in POSITIONS:
            for engine in (katago, sente):
                engine.ask("boardsize 9")
                engine.ask("kata-set-rules tromp-taylor")
                engine.ask("komi 7")
                engine.ask("clear_board")
                for move in moves:
                    engine.ask(f"play {move}")
            theirs, mine = raw_nn(katago.ask("kata-raw-nn 0")), raw_nn(sente.ask("kata-raw-nn 0"))
            checked = [("whiteWin", 0.003), ("whiteLead", 0.1), ("policyPass", 0.002)]
            if mine["shorttermWinlossError"][0] >= 0:  # a network with the short-term heads
                checked += [("shorttermWinlossError", 0.003), ("shorttermScoreError", 0.05)]
            for key, tol in checked:
                assert mine[key][0] == pytest.approx(theirs[key][0], abs=tol), (moves, key)
            for key, tol in (("policy", 0.002), ("whiteOwnership", 0.01)):
                pairs = [(a, b) for a, b in zip(mine[key], theirs[key], strict=True) if a == a]
                assert max(abs(a - b) for a, b in pairs) <= tol, (moves, key)
    finally:
        katago.close()
        sente.close()


@needs_katago
def test_katago_plays_our_exported_g170_as_the_original(shared, g170, tmp_path):
    ours = tmp_path / "g170.safetensors"
    from common.nn.modelfile import save_model_file

    save_model_file(ours, g170.config, g170.state_dict, G170)
    exported = tmp_path / "g170-export.bin.gz"
    write_katago_model(exported, g170.config, g170.state_dict, G170)
    compare_in_katago(ours, exported, tmp_path)


@needs_katago
@pytest.mark.parametrize("size", SIZES)
def test_katago_reads_our_exported_networks_as_we_do(size, tmp_path):
    ours = tmp_path / f"{size}.safetensors"
    model = random_model(11, named_config(size))
    save_model(model, ours, f"sente-{size}")
    exported = tmp_path / f"{size}.bin.gz"
    assert run_client("export-katago", str(ours), str(exported)).returncode == 0
    compare_in_katago(ours, exported, tmp_path)
    if model.config.has_optimistic_policy:
        # KataGo with its optimism at 1 prints the optimistic policy: ours is the same network with
        # that channel as its move policy.
        with torch.no_grad():
            for layer in (model.policy_head.conv_p2, model.policy_head.linear_pass):
                layer.weight[0] = layer.weight[4]
        optimistic = tmp_path / f"{size}-optimistic.safetensors"
        save_model(model, optimistic, f"sente-{size}")
        compare_in_katago(optimistic, exported, tmp_path, optimism=1.0)
