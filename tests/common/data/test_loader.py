"""The training loader: every row once per pass in a shuffled order, batches cropped to their largest
board with everything off the board zero, symmetries that turn inputs and targets together, resuming
at a batch, process shares, and files that cannot be read."""

from __future__ import annotations

import io
import logging
import threading
import time

import numpy as np
import pytest

from common.data.loader import RowFile, ShuffledPass, decode_rows, make_batch, units
from common.data.rows import rows_npz
from common.data.schema import (
    DATA_AREA,
    DATA_LEN,
    GT_GAME_HASH_FIRST,
    GT_TURN_INDEX,
    PASS_POS,
    empty_rows,
    pack_spatial,
)
from common.data.symmetry import turn


def row_file(index: int, rows: int, width: int, height: int, seed: int = 0) -> bytes:
    """rows rows of a width x height board, each carrying (index, turn) in two global targets, with
    random stones, policy targets and ownership on the board only."""
    rng = np.random.default_rng([seed, index])
    arrays = empty_rows(rows)
    board = np.zeros((DATA_LEN, DATA_LEN), np.uint8)
    board[:height, :width] = 1
    for r in range(rows):
        planes = np.zeros((22, DATA_LEN, DATA_LEN), np.uint8)
        planes[0] = board
        planes[1:3] = rng.integers(0, 2, (2, DATA_LEN, DATA_LEN)) * board
        arrays["binaryInputNCHWPacked"][r] = pack_spatial(planes.reshape(22, DATA_AREA))
        policy = (rng.integers(0, 50, (2, DATA_LEN, DATA_LEN)) * board).reshape(2, DATA_AREA)
        arrays["policyTargetsNCMove"][r, :, :DATA_AREA] = policy
        arrays["policyTargetsNCMove"][r, :, PASS_POS] = [7, 3]
        arrays["valueTargetsNCHW"][r, 0] = rng.integers(-1, 2, (DATA_LEN, DATA_LEN)) * board
    arrays["globalTargetsNC"][:, GT_GAME_HASH_FIRST] = index
    arrays["globalTargetsNC"][:, GT_TURN_INDEX] = np.arange(rows)
    arrays["globalInputNC"][:, 5] = index
    return rows_npz(arrays)


@pytest.fixture(scope="module")
def window() -> dict[str, bytes]:
    """Twelve files of 3 to 14 rows on 7x7, 9x9 and a 5x9 rectangle."""
    sizes = [(7, 7), (9, 9), (5, 9)]
    return {f"g{i}.npz": row_file(i, 3 + i, *sizes[i % 3]) for i in range(12)}


def files_of(window: dict[str, bytes]) -> list[RowFile]:
    return [RowFile(name, len(decode_rows(data, name))) for name, data in window.items()]


def ids(batch) -> list[tuple[int, int]]:
    t = batch.global_targets
    return list(
        zip(t[:, GT_GAME_HASH_FIRST].astype(int).tolist(), t[:, GT_TURN_INDEX].astype(int).tolist(), strict=True)
    )


def test_every_row_comes_exactly_once_per_pass_in_a_shuffled_order(window):
    files = files_of(window)
    every = {(i, t) for i, f in enumerate(files) for t in range(f.rows)}
    passes = ShuffledPass(files, window.__getitem__, batch_size=16, seed=1, block_rows=30)
    batches = list(passes.batches())
    seen = [row for b in batches for row in ids(b)]
    assert len(seen) == len(every) == passes.num_rows
    assert set(seen) == every  # each row once
    assert len(batches) == passes.num_batches == -(-len(every) // 16)
    assert [b.size for b in batches[:-1]] == [16] * (len(batches) - 1)
    assert seen != sorted(seen)
    # Rows of one game are spread over its block, not kept together.
    first_game = [k for k, row in enumerate(seen) if row[0] == seen[0][0]]
    assert first_game != list(range(first_game[0], first_game[0] + len(first_game)))
    # The same seed gives the same batches; another seed another order.
    again = [
        row for b in ShuffledPass(files, window.__getitem__, 16, seed=1, block_rows=30).batches() for row in ids(b)
    ]
    other = [
        row for b in ShuffledPass(files, window.__getitem__, 16, seed=2, block_rows=30).batches() for row in ids(b)
    ]
    assert again == seen and other != seen and set(other) == every


def test_drop_last_leaves_out_the_smaller_last_batch(window):
    files = files_of(window)
    passes = ShuffledPass(files, window.__getitem__, batch_size=16, seed=1, drop_last=True)
    batches = list(passes.batches())
    assert len(batches) == passes.num_batches == passes.num_rows // 16
    assert all(b.size == 16 for b in batches)


def test_batches_are_cropped_to_their_largest_board_and_zero_off_it(window):
    files = files_of(window)
    sizes = {0: (7, 7), 1: (9, 9), 2: (5, 9)}
    for symmetries in (False, True):
        for batch in ShuffledPass(
            files, window.__getitem__, batch_size=8, seed=3, block_rows=10, symmetries=symmetries
        ).batches():
            games = batch.global_targets[:, GT_GAME_HASH_FIRST].astype(int)
            boards = [sizes[g % 3] for g in games]
            assert batch.side == max(max(w, h) for w, h in boards)
            assert batch.spatial.dtype == np.float32
            assert batch.spatial.shape == (batch.size, 22, batch.side, batch.side)
            assert batch.policy.shape == (batch.size, 2, batch.side**2 + 1)
            mask = batch.spatial[:, 0]
            for k, (w, h) in enumerate(boards):
                assert mask[k].sum() == w * h
                if not symmetries:
                    assert mask[k, :h, :w].all()
            off = mask == 0
            assert not batch.spatial.transpose(1, 0, 2, 3)[:, off].any()  # no stones off the board
            assert not batch.ownership[off].any()
            board_policy = batch.policy[:, :, :-1].reshape(batch.size, 2, batch.side, batch.side)
            assert not board_policy.transpose(1, 0, 2, 3)[:, off].any()
            assert (batch.policy[:, :, -1] == [7, 3]).all()  # pass stays pass


def test_each_rows_board_is_measured_whether_or_not_a_file_holds_one_board(window):
    """A game's rows share one board (measured once); a file whose rows are of several boards has
    each row measured on its own."""
    one = decode_rows(window["g2.npz"], "g2.npz")  # a 5x9 rectangle: side 9
    assert (one.sides == 9).all() and len(one) == 5
    arrays = {
        name: np.concatenate([a[name] for a in (rows_of(window, "g0.npz"), rows_of(window, "g2.npz"))])
        for name in rows_of(window, "g0.npz")
    }
    mixed = decode_rows(rows_npz(arrays), "mixed.npz")
    assert mixed.sides.tolist() == [7] * 3 + [9] * 5


def rows_of(window: dict[str, bytes], name: str) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(window[name])) as z:
        return {a: z[a] for a in z.files}


def test_symmetries_turn_inputs_and_targets_together(window):
    rows = decode_rows(window["g1.npz"], "g1.npz")  # 9x9
    plain = make_batch(rows, None)
    turned = make_batch(rows, np.random.default_rng(0))
    chosen = np.random.default_rng(0).integers(0, 8, len(rows))
    side = plain.side
    assert len(set(chosen.tolist())) > 1
    for k, s in enumerate(chosen):
        np.testing.assert_array_equal(turned.spatial[k], turn(plain.spatial[k], s))
        np.testing.assert_array_equal(turned.ownership[k], turn(plain.ownership[k], s))
        board = plain.policy[k, :, :-1].reshape(2, side, side)
        np.testing.assert_array_equal(turned.policy[k, :, :-1].reshape(2, side, side), turn(board, s))
    # The 8 symmetries are distinct and form the square's group.
    grid = np.arange(16).reshape(4, 4)
    assert len({turn(grid, s).tobytes() for s in range(8)}) == 8


def test_a_resumed_pass_yields_the_same_batches_from_where_it_stopped(window):
    files = files_of(window)
    passes = ShuffledPass(files, window.__getitem__, batch_size=5, seed=9, block_rows=12)
    every = list(passes.batches())
    for start in (0, 1, 4, len(every) - 1, len(every)):
        resumed = list(ShuffledPass(files, window.__getitem__, batch_size=5, seed=9, block_rows=12).batches(start))
        assert [ids(b) for b in resumed] == [ids(b) for b in every[start:]]
        for a, b in zip(resumed, every[start:], strict=True):
            np.testing.assert_array_equal(a.spatial, b.spatial)  # the same symmetries too


def test_processes_share_a_pass_by_stride(window):
    files = files_of(window)
    passes = ShuffledPass(files, window.__getitem__, batch_size=4, seed=5, block_rows=20)
    every = [ids(b) for b in passes.batches()]
    shares = [[ids(b) for b in passes.batches(start, stride=3)] for start in range(3)]
    for start, share in enumerate(shares):
        assert share == every[start::3]


def test_a_file_that_cannot_be_read_is_skipped_and_named(window, caplog):
    broken = dict(window)
    broken["g3.npz"] = b"not an npz"
    files = files_of(window)
    passes = ShuffledPass(files, broken.__getitem__, batch_size=16, seed=1)
    with caplog.at_level(logging.ERROR):
        seen = {row for b in passes.batches() for row in ids(b)}
    assert passes.skipped_files == ["g3.npz"] and passes.read_files == 12
    assert "g3.npz" in caplog.text
    assert {i for i, _ in seen} == set(range(12)) - {3}


def test_a_pass_resumed_in_a_block_that_cannot_be_read_goes_on_at_the_next_block_s_start(window):
    files = files_of(window)
    passes = ShuffledPass(files, window.__getitem__, batch_size=5, seed=9, block_rows=12)
    every = [row for b in passes.batches() for row in ids(b)]
    assert len(passes.blocks) > 3
    lost = [f for read in passes.blocks[1] for f in read.files]
    broken = {name: (b"gone" if name in {f.name for f in lost} else data) for name, data in window.items()}
    start = int(passes.block_starts[1]) // 5 + 1  # a batch that starts inside block 1
    assert passes.block_starts[1] < start * 5 < passes.block_starts[2]
    resumed = ShuffledPass(files, broken.__getitem__, batch_size=5, seed=9, block_rows=12)
    seen = [row for b in resumed.batches(start) for row in ids(b)]
    assert seen == every[int(passes.block_starts[2]) :]  # block 2 whole, from its first row
    assert resumed.skipped_files == [f.name for f in lost] and resumed.read_files == len(files) - sum(
        len(read.files) for read in passes.blocks[0]
    )


def test_a_block_is_read_several_files_at_once_into_the_same_batches(window):
    """Each file is a request that waits on object storage: a block's files are read ``readers`` at
    a time, and the batches are the same, row for row, as read one after another."""
    import threading
    import time

    lock, running, most = threading.Lock(), [0], [0]

    def slow(name: str) -> bytes:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)  # a round trip
        with lock:
            running[0] -= 1
        if name == "g5.npz":
            raise OSError("the object storage failed")
        return window[name]

    files = files_of(window)
    one = ShuffledPass(files, slow, 16, seed=3, block_rows=40, readers=1)
    assert [ids(b) for b in one.batches()] == [ids(b) for b in one.batches()] and most[0] == 1
    several = ShuffledPass(files, slow, 16, seed=3, block_rows=40, readers=4)
    assert [ids(b) for b in several.batches()] == [ids(b) for b in one.batches()]
    assert most[0] == 4 and several.skipped_files == ["g5.npz"] and several.read_files == len(files)
    with pytest.raises(ValueError, match="readers must be positive"):
        ShuffledPass(files, slow, 16, seed=3, readers=0)


def test_decode_names_the_file_and_the_problem(window):
    with pytest.raises(ValueError, match=r"training rows bad\.npz: cannot be read"):
        decode_rows(b"junk", "bad.npz")
    with pytest.raises(ValueError, match="stride must be positive"):
        next(ShuffledPass(files_of(window), window.__getitem__, 4, 0).batches(stride=0))


def shard_of(window: dict[str, bytes], names: list[str], gap: int = 0) -> tuple[bytes, list[RowFile]]:
    """The files ``names`` one after another in one shard's bytes (``gap`` bytes of filler between
    each two), with their places in it."""
    data, placed = b"", []
    for name in names:
        data += b"\0" * (gap if data else 0)
        placed.append(RowFile(name, len(decode_rows(window[name], name)), "s.tar", len(data), len(window[name])))
        data += window[name]
    return data, placed


def test_the_next_block_is_read_while_this_one_is_cut_into_batches(window):
    """Reading block k+1 starts as soon as block k's rows are in, before the caller asks for block
    k+1's first batch, and no further: at most two blocks' rows are held."""
    files = files_of(window)
    read: list[str] = []
    second = threading.Event()
    passes = ShuffledPass(files, window.__getitem__, 4, seed=1, block_rows=30, prefetch=1)
    blocks = [{f.name for u in block for f in u.files} for block in passes.blocks]
    assert len(blocks) >= 3

    def open_file(name: str) -> bytes:
        read.append(name)
        if name in blocks[1]:
            second.set()
        return window[name]

    passes.open_file = open_file
    batches = passes.batches()
    next(batches)  # block 0's first batch
    assert second.wait(10), "block 1 was not read ahead"
    time.sleep(0.2)
    assert set(read) == blocks[0] | blocks[1]  # block 2 waits for block 1's rows to be taken
    assert len(list(batches)) == passes.num_batches - 1


def test_files_in_a_shard_are_read_in_runs_of_neighbours_with_every_row_once(window):
    """Eight of the twelve files packed into one shard: they are fetched in a few ranged reads,
    runs of at most ``unit_rows`` rows, and the pass is every row once, as unpacked."""
    names = list(window)
    shard, packed = shard_of(window, names[4:])
    files = files_of({n: window[n] for n in names[:4]}) + packed[::-1]  # the window's order is newest first
    asked: list[tuple[str, int, int]] = []

    def open_range(name: str, offset: int, length: int) -> bytes:
        asked.append((name, offset, length))
        return {"s.tar": shard}[name][offset : offset + length]

    passes = ShuffledPass(files, window.__getitem__, 16, seed=1, block_rows=30, open_range=open_range, unit_rows=25)
    seen = [row for b in passes.batches() for row in ids(b)]
    every = {(i, t) for i in range(12) for t in range(3 + i)}
    assert len(seen) == len(every) and set(seen) == every
    # The packed files hold 7+8+...+14 = 84 rows: runs of neighbours of at most 25 rows, in shard order.
    reads = units(files, 25)
    assert [[f.name for f in read.files] for read in reads[4:]] == [
        ["g4.npz", "g5.npz", "g6.npz"],
        ["g7.npz", "g8.npz"],
        ["g9.npz", "g10.npz"],
        ["g11.npz"],
    ]
    spans = [read.span for read in reads[4:]]
    assert sorted(asked) == [("s.tar", start, end - start) for start, end in spans] and passes.read_files == 12
    assert passes.read_packed == 8
    # The same batches read one unit at a time, and resumed in the middle.
    again = ShuffledPass(files, window.__getitem__, 16, seed=1, block_rows=30, open_range=open_range, unit_rows=25)
    assert [ids(b) for b in again.batches(2)] == [ids(b) for b in passes.batches()][2:]
    with pytest.raises(ValueError, match="files in shards need open_range"):
        ShuffledPass(files, window.__getitem__, 16, seed=1)


def test_a_run_is_cut_where_bytes_not_in_the_window_lie_between_its_files(window):
    names = list(window)[:4]
    _, packed = shard_of(window, names, gap=3000)
    assert [len(read.files) for read in units(packed, 1000, gap_bytes=2999)] == [1, 1, 1, 1]
    assert [len(read.files) for read in units(packed, 1000, gap_bytes=3000)] == [4]


def test_a_shard_that_cannot_be_read_skips_its_files_and_names_them(window, caplog):
    names = list(window)
    shard, packed = shard_of(window, names[6:])
    files = files_of({n: window[n] for n in names[:6]}) + packed

    def short(name: str, offset: int, length: int) -> bytes:
        return shard[offset : offset + length - 1]  # a read cut short

    passes = ShuffledPass(files, window.__getitem__, 16, seed=1, open_range=short, unit_rows=1000)
    with caplog.at_level(logging.ERROR):
        seen = {row for b in passes.batches() for row in ids(b)}
    assert passes.skipped_files == names[6:] and passes.read_files == 12
    assert {i for i, _ in seen} == set(range(6)) and "bytes from" in caplog.text


def test_processes_read_disjoint_shares_that_cover_the_window_once(window):
    """Two processes training together: each reads only its share, every byte of the window once
    between them, and the shares differ by at most one read's rows."""
    names = list(window)
    shard, packed = shard_of(window, names[5:])
    files = files_of({n: window[n] for n in names[:5]}) + packed
    everything = {(i, t) for i in range(12) for t in range(3 + i)}
    total_bytes = sum(len(window[n]) for n in names[:5]) + len(shard)

    def open_range(name: str, offset: int, length: int) -> bytes:
        return shard[offset : offset + length]

    shares = [
        ShuffledPass(files, window.__getitem__, 4, seed=3, block_rows=40, open_range=open_range, rank=r, world=2)
        for r in range(2)
    ]
    seen = [[row for b in share.batches() for row in ids(b)] for share in shares]
    assert set(seen[0]).isdisjoint(seen[1]) and set(seen[0]) | set(seen[1]) == everything
    assert shares[0].read_bytes + shares[1].read_bytes == total_bytes
    assert [share.num_rows for share in shares] == shares[0].process_rows == shares[1].process_rows
    assert abs(shares[0].num_rows - shares[1].num_rows) <= max(f.rows for f in files) * 2
    assert shares[0].process_batches() == [-(-rows // 4) for rows in shares[0].process_rows]
    # One process alone reads the window once too, and its share is the whole pass.
    alone = ShuffledPass(files, window.__getitem__, 4, seed=3, block_rows=40, open_range=open_range)
    assert {row for b in alone.batches() for row in ids(b)} == everything and alone.read_bytes == total_bytes
    assert alone.process_batches() == [alone.num_batches]
    with pytest.raises(ValueError, match="rank 2 of 2 processes: must be 0 to 1"):
        ShuffledPass(files, window.__getitem__, 4, seed=3, open_range=open_range, rank=2, world=2)
