"""Pure parts of alerting: the conditions and threshold checks, webhook bodies and
the address checks of webhook URLs, scrub progress. No Django, no database."""
