"""Rollups a chunk per host and span (RollupChunk, apps.telemetry.core.packing
pack_chunk), for a third of the storage. Nothing is moved here: rows rolled up
before are read as they were, and the rollup tick compacts them a bounded number
of spans per tick (apps.telemetry.upkeep), oldest first. Going back, every chunk's
buckets become Rollup rows again."""

import django.db.models.deletion
from django.db import migrations, models


def unchunk(apps, schema_editor):
    from apps.telemetry.core import packing

    Rollup = apps.get_model("telemetry", "Rollup")
    RollupChunk = apps.get_model("telemetry", "RollupChunk")
    Layout = apps.get_model("telemetry", "Layout")
    layouts = {}
    for chunk in RollupChunk.objects.iterator(chunk_size=500):
        if chunk.layout_id not in layouts:
            layouts[chunk.layout_id] = packing.Layout.from_json(
                Layout.objects.get(pk=chunk.layout_id).paths)
        for bucket in packing.unpack_chunk(layouts[chunk.layout_id], chunk.start,
                                           bytes(chunk.data)):
            if Rollup.objects.filter(host_id=chunk.host_id, resolution=chunk.resolution,
                                     start=bucket.start).exists():
                continue  # made again later: the newer row stays
            Rollup.objects.create(host_id=chunk.host_id, resolution=chunk.resolution,
                                  start=bucket.start, values=packing.values(bucket))


class Migration(migrations.Migration):

    dependencies = [
        ('fleet', '0013_alert_to_alerts'),
        ('telemetry', '0003_packed_rollups'),
    ]

    operations = [
        migrations.AddField(
            model_name='rollupmark',
            name='compacted_to',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='rollupmark',
            name='compacted_host',
            field=models.BigIntegerField(default=0),
        ),
        migrations.CreateModel(
            name='RollupChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('resolution', models.CharField(choices=[('5m', '5 minutes'), ('1h', '1 hour')], max_length=2)),
                ('start', models.DateTimeField()),
                ('data', models.BinaryField()),
                ('host', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fleet.host')),
                ('layout', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='telemetry.layout')),
            ],
            options={
                'indexes': [models.Index(fields=['resolution', 'start'], name='telemetry_chunk_time')],
                'constraints': [models.UniqueConstraint(fields=('host', 'resolution', 'start'), name='telemetry_chunk_once')],
            },
        ),
        migrations.RunPython(migrations.RunPython.noop, unchunk),
    ]
