"""Unit tests for autotune.study.claims: one worker at a time holds a study's claim, on a Journal
file (flock) and on PostgreSQL (advisory locks; skipped outside CI without a server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autotune.exceptions import ConfigError
from autotune.study.claims import Claim, _advisory_key, check_workers

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["journal", "postgresql"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "journal":
        return f"journal:///{tmp_path}/study.journal"
    return request.getfixturevalue("postgres_url")


def test_a_claim_held_by_one_worker_makes_the_next_wait(storage):
    first, second = Claim(storage, "s", "proposal"), Claim(storage, "s", "proposal")
    try:
        first.acquire()
        assert not second._try()
        first.release()
        waited: list[bool] = []
        second.acquire(on_wait=lambda: waited.append(True))
        assert second.held and not waited  # free: no waiting
        assert not first._try()
    finally:
        first.close()
        second.close()


def test_claims_of_other_studies_or_purposes_do_not_wait_on_postgresql(postgres_url):
    claims = [
        Claim(postgres_url, study, what) for study in "ab" for what in ("baseline", "proposal")
    ]
    try:
        for claim in claims:
            claim.acquire()
        assert all(claim.held for claim in claims)
    finally:
        for claim in claims:
            claim.close()


def test_a_claim_goes_with_its_process(storage):
    code = (
        "import sys, time; from autotune.study.claims import Claim\n"
        f"Claim({storage!r}, 's', 'baseline').acquire()\n"
        "print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    claim = Claim(storage, "s", "baseline")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        waited: list[bool] = []
        assert not claim._try()
        holder.kill()
        holder.wait()
        claim.acquire(on_wait=lambda: waited.append(True))  # released by the kernel or server
        assert claim.held
    finally:
        claim.close()
        if holder.poll() is None:
            holder.kill()


def test_sqlite_needs_no_claim_since_the_run_lock_holds(tmp_path):
    url = f"sqlite:///{tmp_path}/a.db"
    with Claim(url, "s", "baseline"), Claim(url, "s", "baseline"):
        pass


def test_advisory_keys_are_stable_signed_64_bit_and_distinct():
    keys = {_advisory_key(s, c) for s in ("a", "b") for c in ("baseline", "proposal")}
    assert len(keys) == 4
    assert all(-(2**63) <= k < 2**63 for k in keys)
    assert _advisory_key("a", "baseline") == _advisory_key("a", "baseline")


@pytest.mark.parametrize("url", ["sqlite:///a.db", "mysql+pymysql://u@h/db"])
def test_several_workers_need_a_journal_file_or_postgresql(url):
    check_workers(url, 1)
    with pytest.raises(ConfigError) as info:
        check_workers(url, 3)

    message = str(info.value)
    assert "3 workers need a storage made for several" in message
    assert "journal:///" in message and "postgresql+psycopg://" in message
    assert info.value.argument == "storage"


@pytest.mark.parametrize("url", ["journal:///a.journal", "postgresql://u@h/db"])
def test_journal_files_and_postgresql_take_several_workers(url):
    check_workers(url, 8)


def test_an_unknown_claim_is_a_programming_error():
    with pytest.raises(ValueError, match="claim must be one of"):
        Claim("journal:///a.journal", "s", "everything")
