"""The Alert model moves here from fleet, with its rows: the state takes over
fleet's model on its table (no database change), then the table is renamed
fleet_alert -> alerts_alert. Its kind has no choices any more: the kinds are the
registry's (apps.common.alert_kinds), checked by validate_kind, so a new kind
needs no migration. fleet's 0013 drops the model from fleet's state after this."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import apps.alerts.models


class Migration(migrations.Migration):

    dependencies = [
        ('alerts', '0003_scrub_schedule'),
        ('fleet', '0012_pool_block_cloning'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Alert',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(max_length=32, validators=[apps.alerts.models.validate_kind])),
                        ('message', models.TextField()),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('resolved_at', models.DateTimeField(blank=True, null=True)),
                        ('notified_at', models.DateTimeField(blank=True, null=True)),
                        ('resolution_notified_at', models.DateTimeField(blank=True, null=True)),
                        ('acknowledged_at', models.DateTimeField(blank=True, null=True)),
                        ('acknowledged_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('host', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alerts', to='fleet.host')),
                    ],
                    options={
                        'ordering': ['-created_at'],
                        'indexes': [models.Index(fields=['host', 'kind', 'resolved_at'], name='alert_open')],
                        'db_table': 'fleet_alert',
                    },
                ),
                # The deliveries' foreign key points at the same table as before.
                migrations.AlterField(
                    model_name='delivery',
                    name='alert',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='alerts.alert'),
                ),
            ],
            database_operations=[],
        ),
        migrations.AlterModelTable(name='alert', table=None),
    ]
