"""Alert now lives in apps/alerts (its 0004 took over the model and its rows):
drop it from fleet's state only; the table is not touched here."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('alerts', '0004_alert_from_fleet'),
        ('fleet', '0012_pool_block_cloning'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Alert')],
            database_operations=[],
        ),
    ]
