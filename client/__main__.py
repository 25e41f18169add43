"""The volunteer's program: ``sente <command>`` once installed, ``python -m client <command>`` in a checkout."""

from __future__ import annotations

import argparse
import functools
import logging
import sys
import threading
from pathlib import Path

from common.interrupt import stop_on_signals


class _UsageError(Exception):
    """A bad command-line value: the message names the option."""


def _load_evaluator(
    spec: str, device: str | None, seed: int | None = None, compile: bool = False, precision: str = "auto"
):
    """A network from a file, or the null network for "random" (uniform policy, even value)."""
    if spec == "random":
        from client.search.engine import NullEvaluator

        return NullEvaluator()
    from client.evaluator import Evaluator
    from common.nn.katago_import import KataGoModelError
    from common.nn.modelfile import ModelFileError

    try:
        return Evaluator.from_file(spec, device=device, seed=seed, compile=compile, precision=precision)
    except (OSError, KataGoModelError, ModelFileError, ValueError) as e:
        raise _UsageError(f"--model: {e}") from None


def _visits_pair(text: str) -> tuple[int, int]:
    """'600,100' (full and cheap search visits) or '600' (cheap searches get the same)."""
    parts = text.split(",")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid visits {text!r}: expected N or N,n such as 600,100") from None
    if len(values) not in (1, 2) or min(values) < 1:
        raise argparse.ArgumentTypeError(f"invalid visits {text!r}: expected N or N,n with positive numbers")
    full = values[0]
    cheap = values[1] if len(values) == 2 else full
    if cheap > full:
        raise argparse.ArgumentTypeError(f"invalid visits {text!r}: the cheap search (n) cannot exceed N")
    return full, cheap


def _read_settings(path: str | None, cls):
    if path is None:
        return cls()
    import json

    from common.settings import SettingsError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls.from_dict(data)
    except OSError as e:
        raise _UsageError(f"--settings: cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise _UsageError(f"--settings: {path} is not JSON: {e}") from None
    except SettingsError as e:
        raise _UsageError(f"--settings: {path}: {e}") from None


GTP_VISITS = 400  # the search's visits per move when --visits is not given


def gtp_player_kind(args) -> str:
    """Who chooses the GTP engine's moves: --player when given; else the search when there is a
    network file (--model FILE) or --visits, and the random player otherwise (no --model, or
    --model random without --visits)."""
    if args.player:
        return args.player
    if args.visits or (args.model and args.model != "random"):
        return "search"
    return "random"


def gtp_engine(args):
    """The GTP engine the ``gtp`` command's arguments ask for (not started yet)."""
    from client.gtp.engine import GtpEngine
    from client.gtp.players import Player, PolicyPlayer, RandomPlayer
    from client.gtp.search_player import SearchPlayer
    from common.go.rules import Rules, RulesError

    try:
        rules, komi = Rules.parse(args.rules)
        rules.check_playable()
    except RulesError as e:
        raise _UsageError(f"--rules: {e}") from None
    evaluator = (
        _load_evaluator(args.model, args.device, args.seed, args.compile, args.precision) if args.model else None
    )
    player_kind = gtp_player_kind(args)
    if player_kind in ("policy", "search") and evaluator is None:
        raise _UsageError(f"--player {player_kind} needs a network: --model FILE (or --model random)")
    if player_kind == "policy":
        if not hasattr(evaluator, "evaluate"):
            raise _UsageError("--player policy needs a network file, not --model random")
        player: Player = PolicyPlayer(evaluator)
    elif player_kind == "search":
        from common.settings import MatchSettings

        search = _read_settings(args.settings, MatchSettings).search if args.settings else None
        player = SearchPlayer(
            evaluator,
            args.visits or GTP_VISITS,
            settings=search,
            seed=args.seed or 0,
            max_analysis_visits=args.max_analysis_visits,
        )
    else:
        player = RandomPlayer(args.seed)
    return GtpEngine(player, rules=rules, komi=komi, evaluator=evaluator if hasattr(evaluator, "evaluate") else None)


def _gtp(args) -> int:
    gtp_engine(args).run()
    return 0


ANALYSIS_VISITS = 500  # KataGo's analysis engine's maxVisits in its example config


def _analysis(args) -> int:
    from client.analysis import AnalysisConfig, run_analysis
    from client.analysis.query import PERSPECTIVES

    evaluator = _load_evaluator(args.model, args.device, args.seed, precision=args.precision)
    config = AnalysisConfig(max_visits=args.visits, report_as=PERSPECTIVES[args.report_as.lower()])
    return run_analysis(
        evaluator,
        config,
        seed=args.seed or 0,
        max_visits=args.max_visits,
        quit_without_waiting=args.quit_without_waiting,
        model_name=Path(args.model).name,
    )


def _katago(argv: list[str]) -> int:
    """KataGo's command line (``katago analysis -model M -config C ...``), for KaTrain and others."""
    from client.analysis import run_analysis
    from client.analysis.katago import KataGoCommandError, parse_katago_command
    from common import __version__

    try:
        command = parse_katago_command(argv)
    except KataGoCommandError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for warning in command.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if command.mode == "version":
        print(f"Sente {__version__}: KataGo's analysis engine protocol (katago analysis) on Sente's search")
        return 0
    if command.model is None:  # the parser requires it in every mode but version
        print("error: -model FILE is required", file=sys.stderr)
        return 1
    evaluator = _load_evaluator(command.model, command.device, command.seed, precision=command.precision)
    return run_analysis(
        evaluator,
        command.config,
        seed=command.seed,
        max_visits=command.max_visits,
        quit_without_waiting=command.quit_without_waiting,
        model_name=Path(command.model).name,
    )


def _selfplay(args) -> int:
    from client.selfplay.run import run_selfplay
    from common.settings import SelfPlaySettings, SettingsError

    settings = _read_settings(args.settings, SelfPlaySettings)
    try:
        if args.visits is not None:
            settings = settings.replace(visits=args.visits[0], cheap_visits=args.visits[1])
        if args.size is not None:
            settings = settings.replace(board_sizes=(args.size,), board_size_weights=(1.0,))
    except SettingsError as e:
        raise _UsageError(str(e)) from None
    evaluator = _load_evaluator(args.model, args.device, args.seed, args.compile, args.precision)
    name = "random" if args.model == "random" else Path(args.model).name
    return _play_until_stopped(
        args,
        functools.partial(
            run_selfplay,
            evaluator,
            settings,
            cache_entries=args.cache,
            player_name=f"sente:{name}",
            progress=not args.quiet,
            groups=args.groups,
        ),
    )


def _match(args) -> int:
    from client.match.run import run_match
    from common.settings import MatchSettings, SettingsError

    settings = _read_settings(args.settings, MatchSettings)
    try:
        if args.visits is not None:
            settings = settings.replace(visits=args.visits)
        if args.size is not None:
            settings = settings.replace(board_sizes=(args.size,), board_size_weights=(1.0,))
    except SettingsError as e:
        raise _UsageError(str(e)) from None
    evaluators = [
        _load_evaluator(m, args.device, args.seed, args.compile, args.precision) for m in (args.first, args.second)
    ]
    first, second = ("random" if m == "random" else Path(m).name for m in (args.first, args.second))
    names = (first, second)
    if names[0] == names[1]:
        names = (names[0] + " (1)", names[1] + " (2)")
    return _play_until_stopped(args, functools.partial(run_match, evaluators, names, settings))


INTERRUPTED = 130  # the shell's status for a command ended by Ctrl-C


def _play_until_stopped(args, play) -> int:
    """``play(...)`` (self-play or a match) with the options they share; the first Ctrl-C or SIGTERM
    stops it at its next step (the games in play dropped), a second at once. Prints the summary;
    the exit status is 130 when a signal stopped it."""
    stop = threading.Event()

    def stopping() -> None:
        print("stopping: the games in play are dropped (Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    with stop_on_signals(stop, stopping):
        summary = play(
            games=args.games,
            parallel=args.parallel,
            out_dir=args.out,
            seed=args.seed or 0,
            leaves_per_game=args.leaves,
            stop=stop,
        )
    for line in summary.lines():
        print(line)
    if not stop.is_set():
        return 0
    print(f"stopped early: {summary.games} of {args.games} games finished; their files are in {args.out}")
    return INTERRUPTED


def _contribute(args) -> int:
    from client.contribute.app import run

    return run(args)


def _service(args) -> int:
    from client import service

    try:
        if args.action == "install":
            svc = service.service(args.options)
            if args.print:
                written = svc.definition()
                sys.stdout.write(written.decode("utf-16") if svc.system == "win32" else written.decode())
                return 0
            said = service.install(svc, start=not args.no_start)
        elif args.action == "uninstall":
            said = service.uninstall(service.service())
        else:
            status, text = service.status(service.service())
            print(text)
            return status
    except service.ServiceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if args.action == "install" else 1
    print("\n".join(said))
    return 0


def _convert_katago(args) -> int:
    from common.nn.katago_import import KataGoModelError, read_katago_model
    from common.nn.modelfile import ModelFileError, save_model_file

    try:
        imported = read_katago_model(args.input)
        name = args.name or imported.name
        digest = save_model_file(args.output, imported.config, imported.state_dict, name)
    except (OSError, KataGoModelError, ModelFileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{args.output}: network {name!r}, sha256 {digest}")
    return 0


def _export_katago(args) -> int:
    from common.nn.katago_export import SUFFIX, KataGoExportError, export_version, write_katago_model
    from common.nn.modelfile import ModelFileError, read_model_file

    if not args.output.lower().endswith(SUFFIX):
        print(f"error: {args.output}: KataGo reads its binary format only from a file named *{SUFFIX}", file=sys.stderr)
        return 1
    try:
        mf = read_model_file(args.input)
        name = args.name or mf.name
        digest = write_katago_model(args.output, mf.config, mf.state_dict, name)
    except ModelFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KataGoExportError as e:
        print(f"error: network file {args.input}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {args.output}: cannot write it: {e}", file=sys.stderr)
        return 1
    print(f"{args.output}: KataGo model version {export_version(mf.config)}, network {name!r}, sha256 {digest}")
    return 0


def _twogtp(args) -> int:
    from client.gtp.twogtp import GtpProcessError, main
    from common.go.rules import RulesError

    try:
        return main(args)
    except (GtpProcessError, RulesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _board_size(text: str) -> tuple[int, int]:
    """'9' or '19x13' (columns x rows)."""
    from common.go.geometry import check_size

    x, sep, y = text.lower().partition("x")
    if not x.isdigit() or (sep and not y.isdigit()):
        raise argparse.ArgumentTypeError(f"invalid board size {text!r}: expected N or WxH, such as 9 or 19x13")
    size = (int(x), int(y) if sep else int(x))
    try:
        check_size(*size)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"invalid board size {text!r}: {e}") from None
    return size


def _add_device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None, help="torch device, e.g. cuda:0 or cpu (default: cuda if present)")
    _add_precision_option(parser)


def _add_precision_option(parser: argparse.ArgumentParser) -> None:
    from common.nn.precision import PRECISIONS

    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="the network's arithmetic: auto (the default) uses fp16 or bf16 on a GPU, and bf16 on a CPU with bf16 "
        "instructions, when it agrees with fp32 on the canary positions; fp32 otherwise",
    )


def _add_play_options(parser: argparse.ArgumentParser, files: str, parallel: int) -> None:
    """The options self-play and matches share."""
    parser.add_argument("--games", type=_positive, required=True, help="games to play")
    parser.add_argument(
        "--parallel", type=_positive, default=parallel, help=f"games played at once (default {parallel})"
    )
    parser.add_argument("--out", required=True, help=f"directory for {files}")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0): same seed, same games")
    _add_device_option(parser)
    parser.add_argument("--settings", help="JSON file of settings (default: the paper's)")
    parser.add_argument("--size", type=int, help="play only this board size")
    parser.add_argument("--leaves", type=_positive, default=1, help="leaves per game in each batch (default 1)")
    parser.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compile the network with torch.compile (default: on)",
    )


def build_parser() -> argparse.ArgumentParser:
    from client.build import describe

    # The installed command (`sente`, `sente.exe` on Windows) or the module in a checkout.
    prog = "sente" if Path(sys.argv[0]).stem == "sente" else "python -m client"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--version",
        action="version",
        version=f"Sente client {describe()}",
        help="the client's version and build (the hash of its search and data code) and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    gtp = sub.add_parser("gtp", help="speak GTP on stdin/stdout (for GUIs and referees)")
    gtp.add_argument(
        "--player",
        choices=["random", "policy", "search"],
        default=None,
        help="who chooses the moves: random, policy (the network's top move) or search (MCTS); "
        "default: search with a network file (--model) or --visits, else random",
    )
    gtp.add_argument("--model", help="network file: .safetensors, or a KataGo .bin.gz (random: no network)")
    gtp.add_argument("--visits", type=_positive, help=f"visits per move of the search (default {GTP_VISITS})")
    gtp.add_argument(
        "--max-analysis-visits",
        type=_positive,
        default=20000,
        help="visits at which kata-analyze stops (default 20000)",
    )
    gtp.add_argument(
        "--settings",
        help="JSON file of match settings (as match's): the search plays with their search settings "
        "(default: a match's, KataGo's play search)",
    )
    gtp.add_argument(
        "--compile", action="store_true", help="compile the network with torch.compile (faster moves, slower start)"
    )
    _add_device_option(gtp)
    gtp.add_argument("--seed", type=int, default=None, help="random seed, for reproducible games")
    gtp.add_argument(
        "--rules",
        default="tromp-taylor",
        help="rules: a preset name, KataGo rules JSON or compact string (default: tromp-taylor)",
    )
    gtp.set_defaults(func=_gtp)

    an = sub.add_parser(
        "analysis", help="KataGo's JSON analysis engine protocol on stdin/stdout (for KaTrain and other analysis tools)"
    )
    an.add_argument(
        "--model", required=True, help="network file: .safetensors, or a KataGo .bin.gz (random: no network)"
    )
    an.add_argument(
        "--visits",
        type=_positive,
        default=ANALYSIS_VISITS,
        help=f"visits per position when a query gives no maxVisits (default {ANALYSIS_VISITS})",
    )
    an.add_argument(
        "--max-visits", type=_positive, default=20000, help="the most visits a query may ask for (default 20000)"
    )
    an.add_argument(
        "--report-as",
        choices=["BLACK", "WHITE", "SIDETOMOVE"],
        default="SIDETOMOVE",
        type=str.upper,
        help="whose winrates, scores and ownership the answers give (KataGo's "
        "reportAnalysisWinratesAs; default SIDETOMOVE, as KataGo's)",
    )
    _add_device_option(an)
    an.add_argument("--seed", type=int, default=None, help="random seed")
    an.add_argument(
        "--quit-without-waiting",
        action="store_true",
        help="when stdin ends, stop at once instead of finishing the queued queries",
    )
    an.set_defaults(func=_analysis)

    kg = sub.add_parser(
        "katago",
        help="KataGo's command line: katago analysis -model FILE -config FILE ... "
        "(the sente-katago command runs this; for KaTrain)",
    )
    kg.add_argument("katago_args", nargs=argparse.REMAINDER, help="KataGo's arguments, e.g. analysis -model FILE")
    kg.set_defaults(func=lambda args: _katago(args.katago_args))

    sp = sub.add_parser("selfplay", help="play self-play games into SGF files and training rows (npz)")
    sp.add_argument("--model", required=True, help="network file, or random (a uniform policy, no network)")
    _add_play_options(sp, "the games' .sgf and .npz files", parallel=64)
    sp.add_argument("--visits", type=_visits_pair, help="full and cheap search visits, N,n (default 600,100)")
    sp.add_argument("--cache", type=int, default=1 << 15, help="position cache entries (default 32768)")
    sp.add_argument(
        "--groups",
        type=_positive,
        default=None,
        help="groups of games, each driven by its own thread (default: 2 on a GPU or without a "
        "network, 1 with a network on the CPU)",
    )
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.set_defaults(func=_selfplay)

    mt = sub.add_parser("match", help="play two networks against each other (gating settings)")
    mt.add_argument("first", help="network file (or random)")
    mt.add_argument("second", help="network file (or random)")
    _add_play_options(mt, "the SGF files and the summary", parallel=16)
    mt.add_argument("--visits", type=_positive, help="visits per move (default 600)")
    mt.set_defaults(func=_match)

    co = sub.add_parser(
        "contribute",
        help="play the games a server's run asks for and upload them (the "
        "volunteer's command; log in once with --server and --username)",
    )
    from client.contribute.options import add_arguments

    add_arguments(co)
    co.set_defaults(func=_contribute)

    svc = sub.add_parser(
        "service",
        help="run the contributing client as a service of your account, started at login and again after a "
        "failure (systemd on Linux, launchd on macOS, Task Scheduler on Windows)",
        description="Run `sente contribute` as a service of your account: started at login, at a low priority, "
        "and again after a failure that waiting can mend. Log in first with `sente contribute --server URL "
        "--username NAME`.",
    )
    actions = svc.add_subparsers(dest="action", required=True)
    install = actions.add_parser(
        "install",
        usage="%(prog)s [--no-start] [--print] [OPTIONS OF sente contribute ...]",
        help="write the service's definition and start it; the options after it are `sente contribute`'s",
        description="Write the service's definition and start it. The other options are those of `sente "
        "contribute`, which the service passes on (checked now; paths made absolute).",
    )
    install.add_argument(
        "--no-start", action="store_true", help="write the definition, and neither register nor start it"
    )
    install.add_argument("--print", action="store_true", help="print the definition, and write nothing")
    actions.add_parser("uninstall", help="stop the service, unregister it and delete its definition")
    actions.add_parser("status", help="the service manager's account of the service")
    svc.set_defaults(func=_service, options=[])

    conv = sub.add_parser("convert-katago", help="convert a KataGo model file (.bin.gz) to our .safetensors")
    conv.add_argument("input", help="KataGo model file, version 8 (.bin.gz or .txt.gz)")
    conv.add_argument("output", help="the .safetensors file to write")
    conv.add_argument("--name", help="network name (default: the name inside the KataGo file)")
    conv.set_defaults(func=_convert_katago)

    exp = sub.add_parser(
        "export-katago", help="export a network (.safetensors) to KataGo's model format (.bin.gz, version 8)"
    )
    exp.add_argument("input", help="our network file (.safetensors)")
    exp.add_argument("output", help="the KataGo model file to write (*.bin.gz)")
    exp.add_argument("--name", help="the name inside the KataGo file (default: the network's name)")
    exp.set_defaults(func=_export_katago)

    two = sub.add_parser("twogtp", help="play two GTP engines against each other and print the SGF")
    two.add_argument("--black", help="command line of the black engine (default: the random player)")
    two.add_argument("--white", help="command line of the white engine (default: the random player)")
    two.add_argument("--black-name", help="name of black in the SGF")
    two.add_argument("--white-name", help="name of white in the SGF")
    two.add_argument("--size", type=_board_size, default=(9, 9), help="board size, N or WxH (default: 9)")
    two.add_argument("--komi", type=float, default=7.0, help="komi (default: 7)")
    two.add_argument("--rules", default="chinese", help="rules (default: chinese)")
    two.add_argument("--seed", type=int, default=1, help="seed of the default random engines")
    two.add_argument(
        "--games",
        type=_positive,
        default=1,
        help="games to play, colours alternating (default 1); the SGF collection goes to stdout",
    )
    two.add_argument(
        "--openings",
        type=_non_negative,
        default=0,
        metavar="N",
        help="start each pair of games (colours swapped) from N random moves (default 0)",
    )
    two.add_argument(
        "--referee",
        help="command line of a GTP engine that judges each game ended by two passes: the stones its "
        "final_status_list dead names are taken off before counting (area scoring only), e.g. "
        "'gnugo --mode gtp --chinese-rules'",
    )
    two.add_argument("--summary", help="write the match's summary (wins per engine) to this JSON file")
    two.set_defaults(func=_twogtp)
    return parser


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
        return value

    return parse


_positive = _int_at_least(1)
_non_negative = _int_at_least(0)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["katago"]:  # KataGo's single-dash flags are no argparse options
        try:
            return _katago(argv[1:])
        except _UsageError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "action", None) == "install":
        args.options = extra  # sente contribute's, checked by the service
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args)
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C, or one before a command's work began
        print("interrupted", file=sys.stderr)
        return INTERRUPTED


def katago_main() -> int:
    """The ``sente-katago`` command: ``sente katago ARGS`` under KataGo's name."""
    return main(["katago", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
