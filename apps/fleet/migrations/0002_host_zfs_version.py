from django.db import migrations, models


def copy_from_facts(apps, schema_editor):
    # Same rule as Host.zfs_version_of (historical models have no methods).
    Host = apps.get_model("fleet", "Host")
    for host in Host.objects.only("pk", "facts").iterator(chunk_size=100):
        zfs = (host.facts or {}).get("zfs") or {}
        version = (zfs.get("version") or zfs.get("implementation") or "")[:64]
        if version:
            Host.objects.filter(pk=host.pk).update(zfs_version=version)


class Migration(migrations.Migration):

    dependencies = [
        ('fleet', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='host',
            name='zfs_version',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(copy_from_facts, migrations.RunPython.noop),
    ]
