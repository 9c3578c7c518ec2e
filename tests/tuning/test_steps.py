"""How a failed apply reads (issue 8: the cause first; no rollback offer for nothing)."""

from apps.tuning.steps import failure_text

REFUSED = ('invalid value for parameter "work_mem": "lots"\n'
           "psql -d postgres  (as postgres): alter system set \"work_mem\" = 'lots';")


def test_the_cause_comes_first_then_where_then_the_detail():
    lines = failure_text("postgres /pg/data work_mem", REFUSED, ["zfs tank/pg atime"]).split("\n")
    assert lines == [
        'invalid value for parameter "work_mem": "lots"',
        "Stopped at postgres /pg/data work_mem. Applied before it: zfs tank/pg atime. "
        "Roll the plan back to restore them.",
        "psql -d postgres  (as postgres): alter system set \"work_mem\" = 'lots';",
    ]


def test_nothing_applied_offers_no_rollback():
    text = failure_text("postgres /pg/data work_mem", "refused", [])
    assert text == ("refused\nStopped at postgres /pg/data work_mem. "
                    "Nothing was applied before it: the host is as it was.")
    assert "Roll" not in text


def test_a_change_that_may_be_half_written_is_offered_its_rollback():
    text = failure_text("sysctl - vm.dirty_ratio", "persist failed", [], partly_written=True)
    assert "may be partly written: roll the plan back" in text
