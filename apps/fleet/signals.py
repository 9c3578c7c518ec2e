from django.dispatch import Signal

# Sent after discovery recorded a host's facts (kwargs: host). Other apps
# (tuning's drift check) listen instead of fleet knowing about them.
facts_recorded = Signal()

# Sent by the discovery operation itself, after its record step (kwargs: host,
# runner: the operation's SSH session, log: the operation's log). A receiver may
# read more from the host in the same operation (snapshots list the host's
# snapshots); recording facts outside discovery (tests, seeds) does not send it.
# Sent robustly: a receiver's failure is logged, never fails the discovery.
discovered = Signal()
