"""The end of a transfer as the target sees it, waited for on the target.

A run's last send is followed on the source (detached.follow_with); at the same time
the target is asked to wait for the transfer's snapshot to arrive and then to do its
part of the finish in that same round trip (its releases and properties, its listing,
its inventory's listing), rather than in a round trip of its own after the source has
seen the end. Arrived means: no `zfs recv` into the dataset is running (the listing's
test of a busy target) and the snapshot sent is there with the source's guid, so the
receive has ended with it. It looks for the snapshot every TICK (one `zfs get`), for a
running receive and at the clock every second; it gives up after `seconds` (a second
more at most), or two seconds after a receive it saw running ended without the
snapshot (a failed transfer); then the run finishes as it would without it.

Nothing is run here.
"""

from __future__ import annotations

import math

from apps.remote.commands import Command, dataset_name, integer, script, snapshot_name

TICK = 0.1  # seconds between the target's looks for the snapshot
CHECK_EVERY = 10  # ticks between its looks for a running receive and at the clock

_WAIT = """\
busy() {{ ps -eo args= | awk -v d="$1" '$1 == "zfs" && ($2 == "recv" || $2 == "receive") \
&& $NF == d {{ f = 1 }} END {{ exit !f }}'; }}
there() {{ [ "$(zfs get -Hp -o value guid "$1" 2>/dev/null)" = "$2" ]; }}
i=0 seen=0 gone=0 end=$(( $(date +%s) + {seconds} ))
while :; do
  if there {snapshot} {guid} && ! busy {dataset}; then echo pozol-arrived; exit 0; fi
  if [ $((i % {every})) -eq 0 ]; then
    if busy {dataset}; then seen=1 gone=0; elif [ "$seen" = 1 ]; then gone=$((gone + 1)); fi
    [ "$(date +%s)" -lt "$end" ] && [ "$gone" -lt 2 ] || {{ echo pozol-not-yet; exit 1; }}
  fi
  sleep {tick}; i=$((i + 1))
done
"""


def wait_command(dataset: str, snapshot: str, guid: int, seconds: float) -> Command:
    """Exits 0 (`pozol-arrived`) once `snapshot` of `dataset` is there with `guid` and
    no receive into `dataset` runs; 1 (`pozol-not-yet`) when it gives up."""
    return script(_WAIT, dataset=dataset_name(dataset), snapshot=snapshot_name(snapshot),
                  guid=str(integer(guid, maximum=2**64 - 1)),
                  seconds=integer(math.ceil(seconds), maximum=3600),
                  every=CHECK_EVERY, tick=str(TICK), shown=f"wait for {snapshot} to arrive")
