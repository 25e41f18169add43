"""The trainer's plan, from plain values: a line in a chunk goes on with it; any other starts a chunk
of whole steps when its budget (the rows since it began, every one) and the window allow, or waits
with a note that says for what; the window is read only when a line may start a chunk."""

from __future__ import annotations

import pytest

from common.data.loader import RowFile
from common.settings import TrainingSettings
from server.training.plan import (
    MIN_CHUNK_STEPS,
    Chunk,
    Fresh,
    FromCheckpoint,
    LineState,
    budget,
    chunk_samples,
    needs_window,
    plan_training,
    seed_of,
)
from server.training.window import RowCounts, Window

SETTINGS = TrainingSettings(
    architecture="tiny",
    window_c=300,
    samples_per_row=2.0,
    batch_size=32,
    snapshot_every=128,
    export_every=512,
    shuffle_rows=600,
)
FILES = [RowFile("a.npz", 150), RowFile("b.npz", 100)]
WINDOW = Window(files=FILES, total_rows=400, target_rows=250)


def state(samples: int = 0, rows_at_start: int = 0, chunk: Chunk | None = None, architecture: str = "tiny"):
    return LineState(architecture, rows_at_start, samples, chunk, Fresh(samples))


def test_chunks_are_whole_steps_and_wait_for_enough_data_unless_an_export_is_due():
    assert chunk_samples(0, 20_000, 128, 20_000) == 157 * 128  # rounded up to whole steps
    assert chunk_samples(19_968, 20_000, 128, 20_000) == 128  # one step short of an export: it goes
    assert chunk_samples(20_096, 20_200, 128, 40_000) == 0  # a step's worth more data: it waits
    assert chunk_samples(20_096, 20_096 + MIN_CHUNK_STEPS * 128, 128, 40_000) == MIN_CHUNK_STEPS * 128
    assert chunk_samples(5000, 4000, 128, 20_000) == 0


def test_a_line_budgets_the_rows_since_it_began():
    assert budget(SETTINGS, 400, 0) == 800
    assert budget(SETTINGS, 400, 300) == 200
    assert budget(SETTINGS, 400, 500) == 0  # (fewer rows counted now: the run's games were disabled)


def test_the_budget_counts_every_row_and_the_window_caps_the_random_networks():
    """While only the random network plays (say while the first candidate waits for its gating), its
    rows past window_c do not grow the window, but the trainer goes on training on it."""
    counts = RowCounts(random=1000, other=0)
    assert (counts.total, counts.for_window(SETTINGS)) == (1000, 300)
    assert SETTINGS.window_rows(counts.for_window(SETTINGS)) == 300
    assert RowCounts(random=1000, other=50).for_window(SETTINGS) == 350
    assert RowCounts(random=100, other=50).for_window(SETTINGS) == 150
    window = Window(files=[RowFile("r.npz", 300)], total_rows=counts.total, target_rows=300)
    trained = budget(SETTINGS, 300, 0)  # all that the first c rows allow
    lines = [state(samples=trained)]
    assert needs_window(SETTINGS, counts.total, 1, lines)
    (work,) = plan_training("run", SETTINGS, counts.total, 1, lines, window).work
    assert work.chunk.end_samples == trained + 300  # one pass over the window of c rows
    assert work.chunk.total_rows == 1000
    # An export interval beyond what c rows allow is reached too, as the random network plays on.
    late = SETTINGS.replace(export_every=1024)
    late.validate()
    assert budget(late, counts.total, 0) >= late.export_every > late.samples_per_row * late.window_c
    # A line that began after the random network's rows counts from there, as any line.
    (waiting,) = plan_training("run", SETTINGS, counts.total, 1, [state(rows_at_start=1000)], window).waiting
    assert waiting.note == (
        "waiting for data: 0 samples trained, 0 allowed by 0 rows since the line began at 1,000 at 2 per row"
    )


def test_a_line_starts_a_chunk_on_the_window_with_the_settings_layout():
    start = Fresh()
    plan = plan_training("run", SETTINGS, 400, 1, [LineState("tiny", 0, 0, None, start)], WINDOW)
    assert (plan.settings, plan.waiting) == (SETTINGS, ())
    (work,) = plan.work
    assert (work.architecture, work.start) == ("tiny", start)
    assert work.chunk == Chunk(
        seed=seed_of("run", "tiny", 0),
        files=FILES,
        end_samples=250,  # the budget allows 800, one pass over the window's 250 rows at most
        total_rows=400,
        window_rows=250,
        batch_size=32,
        shuffle_rows=600,
        symmetries=SETTINGS.symmetries,
    )
    wide = Window(files=[RowFile("c.npz", 5000)], total_rows=400, target_rows=5000)
    (work,) = plan_training("run", SETTINGS, 400, 1, [state(samples=100)], wide).work
    assert work.chunk.end_samples == 100 + 704  # the 700 samples left, in whole steps of 32
    assert work.chunk.seed == seed_of("run", "tiny", 100) != seed_of("run", "tiny", 0)


def test_a_line_in_a_chunk_goes_on_with_it():
    chunk = Chunk(seed=7, files=FILES, end_samples=250, total_rows=400, window_rows=250, next_batch=3)
    start = FromCheckpoint(96, chunk)
    lines = [LineState("tiny", 0, 96, chunk, start)]
    assert not needs_window(SETTINGS, 100, 1, lines)
    plan = plan_training("run", SETTINGS, 100, 1, lines, None)  # even with fewer rows than training starts with
    (work,) = plan.work
    assert (work.chunk, work.start) == (chunk, start)
    assert plan.waiting == ()


def test_a_chunk_keeps_its_own_layout_and_takes_the_settings_where_it_has_none():
    older = Chunk(seed=7, files=FILES, end_samples=250, total_rows=400, window_rows=250)
    assert older.with_layout(SETTINGS).layout() == (32, 600, SETTINGS.symmetries)
    planned = Chunk(
        seed=7, files=FILES, end_samples=250, total_rows=400, window_rows=250, batch_size=64, shuffle_rows=50
    )
    assert planned.with_layout(SETTINGS).layout() == (64, 50, SETTINGS.symmetries)


def test_a_line_waits_for_the_first_window():
    lines = [state()]
    assert not needs_window(SETTINGS, 299, 1, lines)
    plan = plan_training("run", SETTINGS, 299, 1, lines, None)
    assert plan.work == ()
    (waiting,) = plan.waiting
    assert (waiting.architecture, waiting.samples) == ("tiny", 0)
    assert waiting.note == "waiting for data: 299 of the 300 rows training starts with"


def test_a_line_waits_for_rows_its_budget_allows():
    lines = [state(samples=800), state(rows_at_start=300, architecture="b6c96")]
    assert not needs_window(SETTINGS, 400, 1, lines)
    plan = plan_training("run", SETTINGS, 400, 1, lines, None)
    assert plan.work == ()
    assert [(w.architecture, w.samples, w.note) for w in plan.waiting] == [
        ("tiny", 800, "waiting for data: 800 samples trained, 800 allowed by 400 rows at 2 per row"),
        (
            "b6c96",
            0,
            "waiting for data: 0 samples trained, 200 allowed by 100 rows since the line began at 300 at 2 per row",
        ),
    ]


def test_a_line_waits_for_a_window_that_holds_a_step_of_every_process():
    small = Window(files=[RowFile("a.npz", 50)], total_rows=400, target_rows=50)
    assert needs_window(SETTINGS, 400, 2, [state()])
    assert plan_training("run", SETTINGS, 400, 1, [state()], small).work[0].chunk.end_samples == 50
    (waiting,) = plan_training("run", SETTINGS, 400, 2, [state()], small).waiting
    assert waiting.note == "waiting for data: the window holds 50 rows, less than a step's 64"


def test_lines_are_planned_in_their_order_each_on_its_own():
    lines = [state(architecture="tiny"), state(samples=800, architecture="b6c96"), state(architecture="b10c128")]
    plan = plan_training("run", SETTINGS, 400, 1, lines, WINDOW)
    assert [w.architecture for w in plan.work] == ["tiny", "b10c128"]
    assert [w.architecture for w in plan.waiting] == ["b6c96"]
    assert plan.work[0].chunk.seed != plan.work[1].chunk.seed


def test_a_plan_that_needs_the_window_is_not_made_without_it():
    assert needs_window(SETTINGS, 400, 1, [state()])
    with pytest.raises(ValueError, match="needs the window"):
        plan_training("run", SETTINGS, 400, 1, [state()], None)
