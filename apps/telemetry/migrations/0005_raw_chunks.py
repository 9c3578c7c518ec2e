"""Raw samples an hour per host in one row (RawChunk, apps.telemetry.core.rawpack).
Nothing is moved here: the rollup tick compacts closed hours, those of before
too, and rows are read beside chunks. Going back, every chunk's samples become
RawSample rows again."""

import django.db.models.deletion
from django.db import migrations, models


def unchunk(apps, schema_editor):
    from apps.telemetry.core import packing, rawpack

    RawSample = apps.get_model("telemetry", "RawSample")
    RawChunk = apps.get_model("telemetry", "RawChunk")
    Layout = apps.get_model("telemetry", "Layout")
    for chunk in RawChunk.objects.iterator(chunk_size=200):
        layout = packing.Layout.from_json(Layout.objects.get(pk=chunk.layout_id).paths)
        RawSample.objects.bulk_create([
            RawSample(host_id=chunk.host_id, taken_at=at, values=values, missing=missing)
            for at, values, missing in rawpack.unpack_samples(layout, chunk.start,
                                                              bytes(chunk.data))])


class Migration(migrations.Migration):

    dependencies = [
        ('fleet', '0013_alert_to_alerts'),
        ('telemetry', '0004_rollup_chunks'),
    ]

    operations = [
        migrations.CreateModel(
            name='RawChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('start', models.DateTimeField()),
                ('data', models.BinaryField()),
                ('host', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='fleet.host')),
                ('layout', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='telemetry.layout')),
            ],
            options={
                'indexes': [models.Index(fields=['start'], name='telemetry_rawchunk_time')],
                'constraints': [models.UniqueConstraint(fields=('host', 'start'), name='telemetry_rawchunk_once')],
            },
        ),
        migrations.RunPython(migrations.RunPython.noop, unchunk),
    ]
