"""What a profile's recordsize "experiment" resolves to on a host: the winner the newest
finished recordsize experiment on that dataset named, from the rows a real run writes
(tests/experiments/factories.py), through the finder tuning asks (apps/tuning/evidence.py)."""

import pytest

from apps.experiments import services
from apps.tuning import evidence
from apps.tuning.core.profiles import ProfileSettings
from tests.bench import seed
from tests.experiments.factories import finished_recordsize_experiment

pytestmark = pytest.mark.django_db

DATA, WAL = "tank/pg/data", "tank/pg/wal"
PAIR = (DATA, "recordsize")
# TPS per value, one per repetition: 32K ahead by far more than the spreads...
CLEAR = {"8K": (1000.0, 1010.0), "16K": (1100.0, 1090.0), "32K": (1300.0, 1290.0),
         "128K": (900.0, 905.0)}
# ... and 16K ahead of 8K by less than their spreads added.
CLOSE = {"8K": (1000.0, 1100.0), "16K": (1060.0, 1080.0)}
EXPERIMENT_DATA = ProfileSettings.from_dict({"zfs": {"data": {"recordsize": "experiment"}}})


def winner(host):
    return services.winners(host, [PAIR]).get(PAIR)


def test_the_winner_is_named_with_the_experiment_that_named_it(replayed_host):
    exp = finished_recordsize_experiment(replayed_host, CLEAR)
    found = winner(replayed_host)
    assert found.value == "32K"
    assert found.reason.startswith(f"won recordsize experiment #{exp.pk} on {DATA} (TPS: 32K")


def test_a_newest_experiment_within_the_spread_names_no_value(replayed_host):
    finished_recordsize_experiment(replayed_host, CLEAR)
    newest = finished_recordsize_experiment(replayed_host, CLOSE)
    found = winner(replayed_host)
    # An older verdict is not revived: the newest evidence says the values do not differ.
    assert found.value is None
    assert f"the newest recordsize experiment on {DATA} (#{newest.pk}) named no winner" \
        in found.reason and "within the spread" in found.reason


def test_the_newest_experiment_wins_over_an_older_one(replayed_host):
    finished_recordsize_experiment(replayed_host, CLOSE)
    finished_recordsize_experiment(replayed_host, {"8K": (1000.0, 1010.0),
                                                   "16K": (1200.0, 1190.0)})
    assert winner(replayed_host).value == "16K"


def test_no_experiment_no_answer_and_tuning_says_run_one(replayed_host):
    assert services.winners(replayed_host, [PAIR]) == {}
    facts = replayed_host.typed_facts()
    assert evidence.winners(replayed_host, facts, EXPERIMENT_DATA) == {}


@pytest.mark.parametrize("where", ["other host", "other dataset", "failed", "other property"])
def test_only_succeeded_recordsize_experiments_on_this_hosts_dataset_count(replayed_host, where):
    other = seed.clone_hosts(replayed_host, 1, prefix="o")[0]
    exp = finished_recordsize_experiment(
        other if where == "other host" else replayed_host, CLEAR,
        target=WAL if where == "other dataset" else DATA,
        status="failed" if where == "failed" else "succeeded")
    if where == "other property":
        exp.key = "compression"
        exp.save(update_fields=["key"])
    assert winner(replayed_host) is None
    if where == "other host":
        assert winner(other).value == "32K"  # it counts on the host it ran on


def test_tuning_asks_the_experiments_through_its_registry(replayed_host):
    finished_recordsize_experiment(replayed_host, CLEAR)
    facts = replayed_host.typed_facts()
    assert evidence.winners(replayed_host, facts, EXPERIMENT_DATA)[PAIR].value == "32K"
    # A profile that leaves nothing to an experiment asks nothing.
    literal = ProfileSettings.from_dict({"zfs": {"data": {"recordsize": "16K"}}})
    assert evidence.winners(replayed_host, facts, literal) == {}
