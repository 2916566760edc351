from django.urls import path

from . import (
    api,
    api_conversations,
    api_documents,
    api_feedback,
    api_files,
    api_mcp,
    api_modes,
    api_prompts,
    api_resend,
    api_usage,
)

urlpatterns = [
    path("agent/execute", api.agent_execute, name="api-agent-execute"),
    path("turns/<str:turn_id>/cancel", api.turn_cancel_api, name="api-turn-cancel"),
    path("conversations", api_conversations.conversations_api, name="api-conversations"),
    path("conversations/<str:conversation_id>", api_conversations.conversation_api, name="api-conversation"),
    path("conversations/<str:conversation_id>/share", api_conversations.conversation_share_api, name="api-share"),
    path("conversations/<str:conversation_id>/documents", api_documents.documents_api, name="api-documents"),
    path(
        "conversations/<str:conversation_id>/documents/<str:document_id>",
        api_documents.document_api,
        name="api-document",
    ),
    path("modes", api_modes.modes_api, name="api-modes"),
    path("mcp/servers", api_mcp.mcp_servers_api, name="api-mcp-servers"),
    path("mcp/prompts", api_mcp.mcp_prompts_api, name="api-mcp-prompts"),
    path("mcp/prompts/<str:server>/<path:name>", api_mcp.mcp_prompt_api, name="api-mcp-prompt"),
    path("prompts", api_prompts.prompts_api, name="api-prompts"),
    path("prompts/<str:prompt_id>", api_prompts.prompt_api, name="api-prompt"),
    path("prompts/<str:prompt_id>/use", api_prompts.prompt_use_api, name="api-prompt-use"),
    path("turns/<str:turn_id>/resend", api_resend.turn_resend_api, name="api-turn-resend"),
    path("turns/<str:turn_id>/feedback", api_feedback.turn_feedback_api, name="api-turn-feedback"),
    path("usage", api_usage.usage_api, name="api-usage"),
    path("files", api_files.files_api, name="api-files"),
    path("files/<str:file_id>", api_files.file_api, name="api-file"),
    path("files/<str:file_id>/content", api_files.file_content_api, name="api-file-content"),
]
