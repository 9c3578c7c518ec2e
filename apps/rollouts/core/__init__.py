"""The pure part of a rollout: no Django, no database, no SSH."""
