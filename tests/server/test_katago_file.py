"""Networks in KataGo's model format on the server: made on the first download, kept, served like
the network's own file."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
from pathlib import Path

import safetensors.numpy
import torch

from common.nn.katago_import import read_katago_model
from common.nn.model import Model, named_config
from common.nn.modelfile import encode_model
from server.networks.models import Network, NetworkKataGoFile
from tests.server import helpers


def test_the_katago_file_is_made_once_and_holds_the_networks_weights(run, trainer, tiny_network_file, tmp_path):
    _, client = trainer
    assert helpers.upload_network(client, "test-net1", tiny_network_file).status_code == 201
    assert not NetworkKataGoFile.objects.exists()

    url = client.get("/api/v1/networks/test-net1/").json()["katago_file_url"]
    assert url.endswith("/api/v1/networks/test-net1/katago")
    response = client.get(url)
    assert response.status_code == 200
    data = helpers.content(response)
    row = NetworkKataGoFile.objects.get(network__name="test-net1")
    assert row.version == 8 and row.size_bytes == len(data) and row.sha256 == hashlib.sha256(data).hexdigest()
    assert response["ETag"] == f'"{row.sha256}"'
    assert 'filename="test-net1.bin.gz"' in response["Content-Disposition"]
    assert gzip.decompress(data).startswith(b"test-net1\n8\n22\n19\ntrunk\n")

    path = tmp_path / "test-net1.bin.gz"
    path.write_bytes(data)
    imported = read_katago_model(path)
    ours = safetensors.numpy.load(tiny_network_file)
    for key in ("conv_spatial.weight", "blocks.1.gpool_to_bias.weight", "value_head.linear_v3.bias"):
        assert (imported.state_dict[key].numpy() == ours[key]).all(), key
    assert (imported.state_dict["policy_head.conv_p2.weight"].numpy() == ours["policy_head.conv_p2.weight"][:1]).all()

    again = client.get("/api/v1/networks/test-net1/katago", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    assert helpers.content(client.get("/api/v1/networks/test-net1/katago")) == data
    assert NetworkKataGoFile.objects.count() == 1


def test_the_random_network_has_no_katago_file(run, client):
    random = Network.objects.get(run__name=helpers.RUN, is_random=True)
    assert client.get(f"/api/v1/networks/{random.name}/").json()["katago_file_url"] is None
    response = client.get(f"/api/v1/networks/{random.name}/katago")
    assert response.status_code == 404 and response.json()["error"]["code"] == "no_file"
    assert client.get("/api/v1/networks/no-such-net/katago").status_code == 404


def test_the_export_does_not_load_torch(tiny_network_file, tmp_path):
    """The web server exports on a download: that must not pull torch into its processes."""
    net = tmp_path / "net.safetensors"
    net.write_bytes(tiny_network_file)
    code = (
        "import sys, safetensors.numpy\n"
        "from common.nn.header import read_header\n"
        "from common.nn.katago_export import katago_model_bytes\n"
        f"data = open({str(net)!r}, 'rb').read()\n"
        "blob = katago_model_bytes(read_header(data).config, safetensors.numpy.load(data), 'net')\n"
        "assert blob[:2] == b'\\x1f\\x8b'\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_network_katago_cannot_run_has_no_katago_file(run, trainer):
    _, client = trainer
    torch.manual_seed(0)
    model = Model(named_config("tinymobile"))
    assert (
        helpers.upload_network(
            client, "mobile-1", encode_model(model.config, model.state_dict(), "mobile-1")
        ).status_code
        == 201
    )
    assert client.get("/api/v1/networks/mobile-1/").json()["katago_file_url"] is None
    response = client.get("/api/v1/networks/mobile-1/katago")
    assert response.status_code == 409 and response.json()["error"]["code"] == "not_exportable"
    assert "no MobileNet blocks" in response.json()["error"]["message"]
    assert not NetworkKataGoFile.objects.exists()
