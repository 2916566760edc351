"""On PostgreSQL, knowledge search ranks passages with the database's full-text search: a stored,
generated tsvector of each passage's title and text (English stemming) and a GIN index over it
(files/knowledge/ranking.py). SQLite has neither: there the passages are ranked with bm25s."""

from django.db import migrations

CREATE = [
    "ALTER TABLE files_passage ADD COLUMN search tsvector GENERATED ALWAYS AS "
    "(to_tsvector('english', coalesce(title, '') || ' ' || text)) STORED",
    "CREATE INDEX files_passage_search ON files_passage USING gin (search)",
]
DROP = [
    "DROP INDEX IF EXISTS files_passage_search",
    "ALTER TABLE files_passage DROP COLUMN IF EXISTS search",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("files", "0005_project_knowledge_passages"),
    ]

    operations = [
        migrations.RunPython(_run(CREATE), _run(DROP)),
    ]
