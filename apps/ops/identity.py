"""Rows whose name is written on the hosts, where renaming would orphan what is there."""

from __future__ import annotations


class NameIsIdentity:
    """Refuses to save a new name over a saved one (a model mixin: put it first).

    A snapshot policy's name is in its snapshots' pozol:policy property, a replication
    link's in its key files and received datasets: a renamed row would no longer find them.
    """

    identity_noun = "object"
    identity_where = "the hosts"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            saved = type(self).objects.filter(pk=self.pk).values_list("name", flat=True).first()
            if saved is not None and saved != self.name:
                raise ValueError(f"{self.identity_noun} {saved!r} cannot be renamed: its name "
                                 f"is its identity on {self.identity_where}")
        super().save(*args, **kwargs)
