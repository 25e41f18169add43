from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('training', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='trainingline',
            name='rows_at_start',
            field=models.BigIntegerField(default=0, help_text='rows of the run counted when the line began; its sample budget counts the rows since'),
        ),
    ]
