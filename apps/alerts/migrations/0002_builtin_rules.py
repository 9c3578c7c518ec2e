"""The built-in rules, one per kind, with their defaults (operators edit them)."""

from django.db import migrations

from apps.alerts.rules import seed_rows


def seed(apps, schema_editor):
    Rule = apps.get_model("alerts", "Rule")
    for row in seed_rows():
        Rule.objects.get_or_create(kind=row["kind"], defaults=row)


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
