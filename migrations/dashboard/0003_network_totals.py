"""Each network's counted self-play games of the counted days (``NetworkTotal``). The days counted
before it are counted again (the first page that needs them does it, as on a new server), so that
every network's total starts complete."""

import django.db.models.deletion
from django.db import migrations, models


def count_again(apps, schema_editor):
    apps.get_model("dashboard", "ContributionDay").objects.all().delete()
    apps.get_model("dashboard", "ContributionTotal").objects.all().delete()
    apps.get_model("dashboard", "RunTally").objects.update(days_through=None, training_games=0, rows=0,
                                                           rating_games=0)


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0002_game_indexes'),
        ('networks', '0002_trainers_group'),
        ('runs', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='NetworkTotal',
            fields=[
                ('network', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to='networks.network')),
                ('training_games', models.PositiveIntegerField(default=0, help_text='counted self-play games of the counted days')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
            ],
        ),
        migrations.RunPython(count_again, migrations.RunPython.noop, elidable=False),
    ]
