from __future__ import annotations

from django import forms

from apps.wal.core.plan import DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT


class EnableForm(forms.Form):
    archive_timeout = forms.IntegerField(
        min_value=MIN_TIMEOUT, max_value=MAX_TIMEOUT, initial=DEFAULT_TIMEOUT,
        label="archive_timeout (seconds)",
        help_text="PostgreSQL starts a new segment at least this often, so no moment waits "
                  "longer than this to be archived (and recoverable).")
