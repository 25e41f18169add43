"""Django migrations of the server's apps, one folder per app (settings.MIGRATION_MODULES)."""
