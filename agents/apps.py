from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agent sessions"

    def ready(self) -> None:
        from django.core import checks

        from files.knowledge.embeddings import configure
        from tools.mcp import set_resource_listener

        from .attachments import resource_changed
        from .llm.catalog import check_models_config, embedding_model
        from .run import gauges
        from .web import streams  # noqa: F401  (connects the signals that close sockets whose access ended)

        set_resource_listener(resource_changed)  # an attached resource's server says it changed
        checks.register(check_models_config)
        configure(embedding_model)  # knowledge search embeds with the models file's embedding model
        gauges.register()  # the metrics read at scrape time
