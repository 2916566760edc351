from django.conf import settings
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from agents.web.views.media import media
from aptix import error_pages
from aptix.invite_views import invite_accept_view, invite_resend_view, invite_revoke_view, invites_page
from aptix.scrape import metrics_view
from tools.admin_views import mcp_status_view

admin.site.site_header = "Aptix administration"
admin.site.site_title = "Aptix admin"
admin.site.index_title = "Catalog, teams and audit"
admin.site.index_template = "admin/aptix_index.html"  # adds the MCP servers page

urlpatterns = [
    path("metrics", metrics_view, name="metrics"),
    # Browsers ask for /favicon.ico on pages that name no icon (the admin, a JSON answer): Aptix's icon.
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"), permanent=True), name="favicon"),
    # Login, logout, the provider's sign-in and the break-glass password form (identity/urls.py).
    path("", include("identity.urls")),
    path("invites/", invites_page, name="invites"),
    path("invites/<int:invite_id>/revoke/", invite_revoke_view, name="invite-revoke"),
    path("invites/<int:invite_id>/resend/", invite_resend_view, name="invite-resend"),
    path("invite/<str:secret>/", invite_accept_view, name="invite-accept"),
    path("admin/mcp/", admin.site.admin_view(mcp_status_view), name="admin-mcp-status"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("automations.web.api_urls")),
    path("api/v1/", include("agents.web.api_urls")),
    path(f"{settings.MEDIA_URL.strip('/')}/<path:path>", media, name="media"),
    path("", include("automations.web.urls")),
    path("", include("agents.web.urls")),
]

# Django's pages, giving back the connections they open on the thread Django renders them on.
handler400 = error_pages.bad_request
handler403 = error_pages.permission_denied
handler404 = error_pages.page_not_found
handler500 = error_pages.server_error
