"""On PostgreSQL whose server has the pgvector extension, the passages' vectors also go in a `vector`
column that the database searches (files/knowledge/vectors.py); elsewhere nothing changes (the
vectors stay float32 bytes, ranked with numpy). A role that may not create the extension leaves it
out with a warning; the start-up hook tries again."""

from django.db import migrations


def forward(apps, schema_editor):
    from files.knowledge.vectors import pgvector_enable

    pgvector_enable(schema_editor.connection)


def backward(apps, schema_editor):
    from files.knowledge.vectors import forget

    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE files_passage DROP COLUMN IF EXISTS vector")
    forget()


class Migration(migrations.Migration):
    dependencies = [
        ("files", "0006_passage_full_text_search_on_postgresql"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
