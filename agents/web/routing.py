from django.urls import path

from .consumers import SessionStreamConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:session_id>/", SessionStreamConsumer.as_asgi()),
]
