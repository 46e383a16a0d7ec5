"""Crash safety, the short version of `bench/chaos.py`: rounds of writes, supersedes,
checkpoint jobs and mines of a changing tree ended by `kill -9` of the daemon (or a worker),
then every acknowledged write found, nothing filed twice, every job ended, every file's drawer
current, the search indexes in step with the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import Report, arguments, chaos

WRITERS = ["--writers", "3"]
# Shares high enough that the rounds of each test's seed hold each kind of kill it asserts.
KILLS = ["--startup-kills", "0.2", "--migration-kills", "0.2", "--claim-kills", "0.3"]


@pytest.mark.slow
def test_kill_9_loses_nothing_acknowledged_and_files_nothing_twice(tmp_path: Path) -> None:
    report = chaos(tmp_path, arguments(["--rounds", "10", "--seed", "7", *WRITERS, *KILLS]))

    assert min(report.startup_kills, report.migration_kills, report.claim_kills) > 0
    assert_nothing_lost(report)


@pytest.mark.slow
def test_kill_9_of_the_daemon_or_a_worker_of_a_remote_palace(tmp_path: Path) -> None:
    report = chaos(
        tmp_path, arguments(["--rounds", "6", "--seed", "9", *WRITERS, "--remote", *KILLS])
    )

    assert min(report.startup_kills, report.migration_kills, report.worker_kills) > 0
    assert_nothing_lost(report)


def assert_nothing_lost(report: Report) -> None:
    assert report.acknowledged > 0
    assert report.restarts_failed == 0
    assert (report.lost_drawers, report.lost_supersedes) == (0, 0)
    assert report.stored_twice == 0
    assert (report.jobs_lost, report.jobs_not_terminal, report.jobs_incomplete) == (0, 0, 0)
    assert report.index_gap == 0
    assert report.mines > 0
    assert (report.documents_behind, report.drawers_left_behind) == (0, 0)
