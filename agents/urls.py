from django.urls import path

from .views import sessions

urlpatterns = [
    path("", sessions.home, name="home"),
    path("sessions/new/", sessions.session_new, name="session-new"),
    path("sessions/<str:session_id>/", sessions.session_detail, name="session-detail"),
]
