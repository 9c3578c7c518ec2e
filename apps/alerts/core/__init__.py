"""Pure parts of alerting: the rules' specs and conditions, webhook bodies and the
address checks of webhook URLs. No Django, no database."""
