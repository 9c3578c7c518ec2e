"""Tuning: profiles (versioned), assignment, advisor, plans, apply, rollback, drift.

Discovery runs a few batched commands and parses their output into facts
(pools, datasets and properties, ARC, kernel, disks, PostgreSQL clusters and
settings, and the dead rows and largest TOAST tables (with the columns
PostgreSQL compresses) of each cluster's five largest databases: a fourth round
trip with one psql per database of 32 MiB or more, since a session sees only
its own database's tables, each name passing the validators first): a typed
`HostFacts` (apps/remote/facts/host.py), stored per host as its JSON
(`Host.facts`, which pages and the API read as is). Tuning gets it back typed
from one constructor, `Host.typed_facts()` (`HostFacts.from_dict`: fields an
older discovery or a failed probe left out read as None or empty, meaning "not
known"). Tuning is pure: apps/tuning/core takes `HostFacts`, and
apps/tuning/core/facts.py holds the readers that know something (dataset roles,
disk kind, ARC ceiling, settings in bytes). A profile version resolves its
formulas against a host's facts, the planner compares desired with current and
lists each change with how it applies (online, reload, restart, new data only,
unsupported here and why) and its risk, and the advisor lists findings with
evidence and sources. PostgreSQL settings are checked per major
(apps/tuning/core/pgsettings.py): one table per supported major, 13 to 18, in
apps/tuning/core/pg_settings/, captured from that major's real `postgres
--describe-config` and pg_settings by tests/tools/pg_settings_tables.py (`make
pg-settings-tables`, not run by `make test`). A profile alone is checked
against their union; on a host its own rows, then its major's table, decide.
Applying a stored plan is an Operation: each change is read (before-value
kept), written, read back and verified with the planner's own comparison;
rollback is a plan of the before-values. zfs_arc_max is the exception: a
running OpenZFS ignores 0 (arc_tuning_update), so apply records arcstats c_max
with it and counts a value as applied only once c_max reads it, and rollback
writes that ceiling back (the size restored now) and drops the modprobe.d line
(automatic sizing at the next boot), as the plan and the rollback row say
(apps/tuning/core/rollback.py). Advice that exists for one version (PostgreSQL
18's io_method and checksums default, OpenZFS 2.3's ARC default and `direct`
property) lives in rules_versions.py and fires only there.

A data or wal `recordsize` may be `experiment`: the value the newest finished
recordsize experiment on that dataset of this host named the winner (on its own
primary metric; a newest one "within the spread" names none, and an older
verdict is not revived). Experiments are built on tuning, so tuning imports
nothing of them: apps/experiments registers a finder in apps/tuning/evidence.py
at ready(), and the tuning service asks it for the (dataset, property) pairs
the profile leaves open (apps/tuning/core/winners.py) before it plans, judges
drift or advises; the pure planner gets the winners as a mapping and plans the
concrete value, its formula shown as `experiment` and its reason naming the
experiment. Without a winner the change is `not_planned` (supported=False,
status `not_planned`) with the reason, never a guess; drift and the advisor's
projection skip it as they skip an unsupported change. A succeeded
`experiments.run` refreshes its host's drift (a post_save receiver, after the
commit).
"""
