from django.dispatch import Signal

# Sent after discovery recorded a host's facts (kwargs: host). Other apps
# (tuning's drift check) listen instead of fleet knowing about them.
facts_recorded = Signal()
