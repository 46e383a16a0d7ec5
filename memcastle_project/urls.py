"""Every route of the REST API, under /api."""

from __future__ import annotations

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from graph import views as graph
from jobs import views as jobs
from memcastle_project import streams, views
from palace import views as palace
from palace.embeddings import views as embeddings
from palace.search import views as search
from sources import views as sources

urlpatterns = [
    path("api/health", views.HealthView.as_view()),
    path("api/status", views.StatusView.as_view()),
    path("api/shutdown", views.ShutdownView.as_view()),
    path("api/auth/token", views.TokenView.as_view()),
    path("api/wings", palace.WingsView.as_view()),
    path("api/wings/<str:wing>", palace.WingView.as_view()),
    path("api/wings/<str:wing>/rooms", palace.RoomsView.as_view()),
    path("api/wings/<str:wing>/rooms/<str:room>", palace.RoomView.as_view()),
    path("api/wings/<str:wing>/rooms/<str:room>/drawers", palace.DrawersView.as_view()),
    path(
        "api/wings/<str:wing>/rooms/<str:room>/drawers/<path:drawer>",
        palace.DrawerView.as_view(),
    ),
    path("api/drawers/<str:drawer_id>", palace.DrawerByIdView.as_view()),
    path("api/drawers/<str:drawer_id>/supersede", palace.DrawerSupersedeView.as_view()),
    path("api/drawers/<str:drawer_id>/history", palace.DrawerHistoryView.as_view()),
    path("api/drawers/<str:drawer_id>/duplicates", palace.DrawerDuplicatesView.as_view()),
    path("api/drawers/<str:drawer_id>/embedding", embeddings.DrawerEmbeddingView.as_view()),
    path("api/drawers/<str:drawer_id>/mentions", graph.DrawerMentionsView.as_view()),
    path("api/entities", graph.EntitiesView.as_view()),
    path("api/entities/<str:entity_id>", graph.EntityView.as_view()),
    path("api/entities/<str:entity_id>/relationships", graph.EntityRelationshipsView.as_view()),
    path("api/entities/<str:entity_id>/mentions", graph.EntityMentionsView.as_view()),
    path("api/entities/<str:entity_id>/candidates", graph.EntityCandidatesView.as_view()),
    path("api/entities/<str:entity_id>/aliases", graph.EntityAliasesView.as_view()),
    path(
        "api/relationships/<str:relationship_id>/history",
        graph.RelationshipHistoryView.as_view(),
    ),
    path("api/graph", graph.GraphView.as_view()),
    path("api/notes", palace.NotesView.as_view()),
    path("api/diary", palace.DiaryView.as_view()),
    path("api/wake-up", palace.WakeUpView.as_view()),
    path("api/search", search.SearchView.as_view()),
    path("api/recall", search.RecallView.as_view()),
    path("api/jobs", jobs.JobsView.as_view()),
    path("api/jobs/<str:job_id>", jobs.JobView.as_view()),
    re_path(
        r"^api/jobs/(?P<job_id>[^/]+)/(?P<action>pause|resume|cancel|force-cancel|retry)$",
        jobs.JobControlView.as_view(),
    ),
    path("api/sources", sources.SourcesView.as_view()),
    path("api/events", streams.events),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema")),
    re_path(r"^ui(?:/(?P<path>.*))?$", views.dashboard),
]

handler400 = "kernel.rest.handler400"
handler404 = "kernel.rest.handler404"
handler500 = "kernel.rest.handler500"
