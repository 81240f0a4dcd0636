"""On PostgreSQL, every insert into the change log notifies `supervisor_changes`, which
wakes the live relays at once instead of at their next poll."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION supervisor_notify_changes() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('supervisor_changes', '');
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS supervisor_change_notify ON core_change;
CREATE TRIGGER supervisor_change_notify AFTER INSERT ON core_change
  FOR EACH STATEMENT EXECUTE FUNCTION supervisor_notify_changes();
"""
DROP = """
DROP TRIGGER IF EXISTS supervisor_change_notify ON core_change;
DROP FUNCTION IF EXISTS supervisor_notify_changes();
"""


def run(sql):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return apply


class Migration(migrations.Migration):
    dependencies = [("core", "0002_detection_bookkeeping")]
    operations = [migrations.RunPython(run(CREATE), run(DROP))]
