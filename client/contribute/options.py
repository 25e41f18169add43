"""The contributing client's command-line options, apart from the client itself: ``sente --help``
and every other command build their parser without loading what contributing needs (torch among it)."""

from __future__ import annotations

from pathlib import Path

from client.contribute import config as client_config
from client.contribute.inplay import DEFAULT_CHECKPOINT_SECONDS
from client.contribute.tasks import LOOK_SECONDS

DEFAULT_PARALLEL_GPU = 64
DEFAULT_PARALLEL_CPU = 16


def default_parallel(device: str, gpu_share: float | None) -> int:
    """Games at once on a device with --parallel auto until a measurement says otherwise (and with
    the random network, which is not measured): the default, times the share of the GPU
    (--gpu-share) on a GPU."""
    if device == "cpu":
        return DEFAULT_PARALLEL_CPU
    return max(1, round(DEFAULT_PARALLEL_GPU * (gpu_share or 1.0)))


def add_arguments(parser) -> None:
    parser.add_argument("--server", help="the server's address, e.g. https://sente.example.org (kept)")
    parser.add_argument("--username", help="your account on the server: logs in and keeps a client token")
    parser.add_argument(
        "--password-stdin", action="store_true", help="read the password from the first line of stdin instead of asking"
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="settings file (default: client.json in your settings folder, on Linux ~/.config/sente/)",
    )
    parser.add_argument(
        "--device",
        help="cpu, cuda:0, mps (a Mac's GPU), or several such as cuda:0,cuda:1 (one worker each; default: every "
        "GPU, else the CPU)",
    )
    parser.add_argument(
        "--precision",
        help="the network's arithmetic: auto (the default) uses fp16 or bf16 on a GPU, and bf16 on a CPU with bf16 "
        "instructions, when it agrees with fp32 on the canary positions; fp32, fp16 or bf16 asks for one (a "
        "reduced one is still checked, and fp32 used if it fails)",
    )
    parser.add_argument(
        "--parallel",
        help="games at once per worker, or auto (the default): measured on each device the first time it plays a "
        "network of a given size, where evaluations per second stop rising, and kept",
    )
    parser.add_argument(
        "--data-dir", help="where the outbox, the networks and the log live (default: ~/.local/share/sente)"
    )
    parser.add_argument("--games", help="stop after this many games, self-play and rating together (default: never)")
    parser.add_argument(
        "--only", choices=client_config.ONLY, help="play only self-play games or only rating games (default: both)"
    )
    parser.add_argument(
        "--proxy", help="an HTTP(S) proxy for every request, e.g. http://proxy:3128 (default: HTTPS_PROXY, if set)"
    )
    parser.add_argument(
        "--mirror",
        help="download networks from here first, e.g. https://mirror.example.org/sente/{name}.safetensors "
        "({name} or {sha256} stands for the network; the server's copy if the mirror fails)",
    )
    parser.add_argument(
        "--max-download-mb",
        help="the most any download may bring, in MiB: a network announced larger is refused, and an answer that "
        "goes past it (or past the size it announced) is cut (default 2048)",
    )
    parser.add_argument("--sgf-dir", help="keep a copy of every finished game's SGF in this folder")
    parser.add_argument(
        "--watch-file",
        help="rewrite this file after each move of one self-play game in play: the board as text, or the SGF "
        "if the name ends in .sgf",
    )
    parser.add_argument(
        "--hours",
        help="play only at these hours of the day, local time, e.g. 22-7 or 9:30-17:00,20-23 (paused outside)",
    )
    parser.add_argument(
        "--gpu-share",
        help="the share of each GPU to use, 0.5 for half: that share of the games at once --parallel auto finds "
        "(default 1)",
    )
    parser.add_argument(
        "--max-temperature",
        help="the hottest an NVIDIA GPU may run, in degrees Celsius, e.g. 80: above it the GPU plays half its games "
        "at once, then a quarter, then pauses until it is 5 degrees cooler (default: no limit)",
    )
    parser.add_argument(
        "--max-power",
        help="the most an NVIDIA GPU may draw, in watts (200) or as a share of the card's own limit (80%%); above it "
        "the GPU plays fewer games at once, as for --max-temperature (default: no limit)",
    )
    parser.add_argument(
        "--pause-when-busy",
        action="store_true",
        default=None,
        help="pause a GPU's games while another program (a game, a render) uses that GPU; they go on 10 s after it "
        "is free again",
    )
    parser.add_argument(
        "--priority",
        help="the client's process priority: low (the default: nice 10, below normal on Windows, so that your own "
        "programs come first) or normal",
    )
    parser.add_argument(
        "--checkpoint-seconds",
        help=f"save each game in play this often, to play it on after a crash or a reboot (default "
        f"{DEFAULT_CHECKPOINT_SECONDS:.0f})",
    )
    parser.add_argument(
        "--retry-seconds",
        type=float,
        default=5.0,
        help="first pause before trying the server again; it doubles up to an hour (default 5)",
    )
    parser.add_argument(
        "--look-seconds",
        type=float,
        default=LOOK_SECONDS,
        help=f"how often to look at the server's run for a new network, new settings or a candidate waiting for "
        f"its rating games (default {LOOK_SECONDS:.0f}; a client beside its server can look every few seconds)",
    )
