"""The networks' canary references: queued when a network is stored, computed by the background
task (or ``manage.py canary``), served with the network's details."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from common import canary
from common.nn.canary import evaluate_canary
from common.nn.model import Model
from common.nn.modelfile import decode_model
from server.networks.models import Network, NetworkCanary
from tests.server import helpers


@pytest.mark.kernels
def test_upload_queues_the_canary_which_the_task_computes_and_the_api_serves(
    run, trainer, tiny_network_file, django_capture_on_commit_callbacks
):
    from django_tasks_db.models import DBTaskResult

    from server.networks.tasks import compute_network_canary

    _, client = trainer
    with django_capture_on_commit_callbacks(execute=True):
        assert helpers.upload_network(client, "test-net1", tiny_network_file).status_code == 201
    network = Network.objects.get(name="test-net1")
    queued = DBTaskResult.objects.get()
    assert queued.task_path.endswith("compute_network_canary") and queued.args_kwargs["args"] == [network.pk]
    assert client.get("/api/v1/networks/test-net1/").json()["canary"] is None  # the upload did not wait for it
    assert client.get("/api/v1/networks/test-net1/canary").status_code == 404

    compute_network_canary.call(network.pk)
    info = client.get("/api/v1/networks/test-net1/").json()["canary"]
    assert info["fingerprint"] == canary.fingerprint() and info["version"] == canary.CANARY_VERSION
    response = client.get(info["url"])
    assert response.status_code == 200
    data = helpers.content(response)
    assert len(data) == info["bytes"]
    reference = canary.CanaryOutputs.from_npz(data)
    # The reference is the network's own fp32 outputs: a fresh evaluation of the file agrees with it.
    mf = decode_model(tiny_network_file)
    model = Model(mf.config, initialize=False)
    model.load_state_dict(mf.state_dict)
    result = canary.compare(reference, evaluate_canary(model.eval()))
    assert result.passed, result.describe()
    assert np.allclose(reference.policy.sum(axis=1), 1.0, atol=1e-4)

    # A current reference is not computed again; the command computes one on demand.
    first = NetworkCanary.objects.get(network=network).computed_at
    compute_network_canary.call(network.pk)
    assert NetworkCanary.objects.get(network=network).computed_at == first
    out = io.StringIO()
    call_command("canary", "--network", "test-net1", stdout=out)
    assert "test-net1: canary computed" in out.getvalue()
    assert NetworkCanary.objects.get(network=network).computed_at > first
    call_command("canary", stdout=out)
    assert "every network has a current canary" in out.getvalue()


@pytest.mark.kernels  # the fingerprint encodes the positions
def test_canary_command_refuses_unknown_and_random_networks(run):
    with pytest.raises(CommandError, match="there is no network 'nope'"):
        call_command("canary", "--network", "nope")
    with pytest.raises(CommandError, match="random network"):
        call_command("canary", "--network", f"{helpers.RUN}-random")
    assert canary.fingerprint() not in ("", None)
    with pytest.raises(ValueError, match="not canary outputs"):
        canary.CanaryOutputs.from_npz(b"not an npz file", "the test's bytes")
