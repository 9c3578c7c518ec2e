"""Rollups packed (apps.telemetry.core.packing), and one rollup mark per resolution
for the whole fleet instead of one per host. Rows rolled up before this keep their
JSON `values` and are read as they were; the fleet's marks start at the earliest
host's, so the first tick after it makes again (and replaces) at most what some
host had made already."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Min


def fleet_marks(apps, schema_editor):
    HostTelemetry = apps.get_model("telemetry", "HostTelemetry")
    RollupMark = apps.get_model("telemetry", "RollupMark")
    marks = HostTelemetry.objects.aggregate(five=Min("rolled_five_minute_to"),
                                           hourly=Min("rolled_hourly_to"))
    RollupMark.objects.create(resolution="5m", rolled_to=marks["five"])
    RollupMark.objects.create(resolution="1h", rolled_to=marks["hourly"])


def unpack_rows(apps, schema_editor):
    """Going back: packed rows get their JSON `values` again, which 0002 requires."""
    from apps.telemetry.core import packing

    Rollup = apps.get_model("telemetry", "Rollup")
    layouts = {}
    for row in Rollup.objects.filter(values__isnull=True).iterator(chunk_size=1000):
        if row.layout_id not in layouts:
            layouts[row.layout_id] = packing.Layout.from_json(row.layout.paths)
        bucket = packing.unpack(layouts[row.layout_id], row.start, bytes(row.data))
        Rollup.objects.filter(pk=row.pk).update(values=packing.values(bucket))


class Migration(migrations.Migration):

    dependencies = [
        ('telemetry', '0002_host_current_values'),
    ]

    operations = [
        migrations.CreateModel(
            name='Layout',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('digest', models.CharField(max_length=64, unique=True)),
                ('paths', models.JSONField()),
            ],
        ),
        migrations.CreateModel(
            name='RollupMark',
            fields=[
                ('resolution', models.CharField(max_length=2, primary_key=True, serialize=False)),
                ('rolled_to', models.DateTimeField(blank=True, null=True)),
                ('raw_id', models.BigIntegerField(default=0)),
            ],
        ),
        migrations.AlterField(
            model_name='rollup',
            name='values',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='rollup',
            name='data',
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='rollup',
            name='layout',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='telemetry.layout'),
        ),
        migrations.RunPython(migrations.RunPython.noop, unpack_rows),
        migrations.RunPython(fleet_marks, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='hosttelemetry',
            name='rolled_five_minute_to',
        ),
        migrations.RemoveField(
            model_name='hosttelemetry',
            name='rolled_hourly_to',
        ),
    ]
