from apps.alerts.core import scrub

OPENZFS_RUNNING = """  pool: tank
 state: ONLINE
  scan: scrub in progress since Sun Jul 25 16:07:49 2021
\t403M scanned at 100M/s, 68.4M issued at 10.0M/s, 405M total
\t0B repaired, 16.91% done, 00:00:04 to go
config:
"""
ZFS_FUSE_RUNNING = """  pool: tank
 state: ONLINE
 scrub: scrub in progress for 0h0m, 45.23% done, 0h1m to go
config:
"""
ZFS_FUSE_DONE = """  pool: tank
 state: ONLINE
 scrub: scrub completed after 0h0m with 0 errors on Mon Nov 23 21:35:44 2026
config:
"""


def test_progress_is_read_in_both_dialects():
    assert scrub.read(OPENZFS_RUNNING) == scrub.ScrubState("in progress", 16.91, None, None)
    assert scrub.read(ZFS_FUSE_RUNNING).percent == 45.23


def test_a_finished_scrub_gives_its_errors_and_end():
    assert scrub.read(ZFS_FUSE_DONE) == scrub.ScrubState(
        "finished", None, "2026-11-23T21:35:44", 0)


def test_a_pool_never_scrubbed_is_none():
    assert scrub.read("  pool: tank\n state: ONLINE\n scrub: none requested\n").state == "none"
    assert scrub.already_running("cannot scrub tank: currently scrubbing; use 'zpool scrub -s'")
