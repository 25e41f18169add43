"""Indexes of the games that the dashboard's counts read: the games of a run by time, holding the
contributor, the rows and the disabled flag, so that counting the last hours is an index-only scan
(PostgreSQL's INCLUDE; elsewhere the columns are part of the key). Made CONCURRENTLY on PostgreSQL:
a big table keeps taking uploads meanwhile."""

from django.db import migrations

INDEXES = [
    ("dash_tgame_run_created", "games_traininggame", ("run_id", "created_at"), ("user_id", "rows", "disabled")),
    ("dash_rgame_run_created", "games_ratinggame", ("run_id", "created_at"), ("user_id", "disabled")),
]


def create(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    for name, table, key, extra in INDEXES:
        if postgres:
            sql = (f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} ({', '.join(key)}) "
                   f"INCLUDE ({', '.join(extra)})")
        else:
            sql = f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({', '.join(key + extra)})"
        schema_editor.execute(sql)


def drop(apps, schema_editor):
    concurrently = " CONCURRENTLY" if schema_editor.connection.vendor == "postgresql" else ""
    for name, _, _, _ in INDEXES:
        schema_editor.execute(f"DROP INDEX{concurrently} IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("dashboard", "0001_initial"),
        ("games", "0001_initial"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
