"""The pure part of events: the body as bytes and its signature (no Django)."""
