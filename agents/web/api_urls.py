from django.urls import path

from . import api, api_documents, api_resend

urlpatterns = [
    path("agent/execute", api.agent_execute, name="api-agent-execute"),
    path("turns/<str:turn_id>/cancel", api.turn_cancel_api, name="api-turn-cancel"),
    path("conversations/<str:conversation_id>/documents", api_documents.documents_api, name="api-documents"),
    path(
        "conversations/<str:conversation_id>/documents/<str:document_id>",
        api_documents.document_api,
        name="api-document",
    ),
    path("turns/<str:turn_id>/resend", api_resend.turn_resend_api, name="api-turn-resend"),
]
