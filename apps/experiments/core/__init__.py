"""Experiments' pure core: no Django, no database, no SSH.

- runs: the alternating order of the runs, WAL per transaction, the room a run needs;
- stats, report: each value's mean and spread, the verdict, the results and charts;
- knobs: what a value of each layer may be (the host side is host_settings.py);
- commands: the remote commands of a run, and a custom script's confinement;
- scripts: the checks of a custom pgbench script;
- templates: the built-in templates and scripts, with the figures they reproduce.
"""
