"""Every route of the REST API, under /api, each view bound to the services it calls.

The daemon's ASGI handler sets a `URLConf` on each request (`memcastle_project.asgi`), so the
views get their services from the composition root rather than looking them up. `ROOT_URLCONF`
names this module only because Django requires one; it routes nothing by itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.urls import URLPattern, URLResolver, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from graph import views as graph
from jobs import views as jobs
from memcastle_project import streams, views
from palace import views as palace
from palace.embeddings import views as embeddings
from palace.search import views as search
from sources import miner_views as miners
from sources import registry_views as registry
from sources import trigger_views as triggers
from sources import views as sources
from web import views as web

if TYPE_CHECKING:
    from memcastle_project.composition import Services

urlpatterns: list[URLPattern | URLResolver] = []


class URLConf:
    """The routes of one daemon. Django reads `urlpatterns` and the error handlers from the
    object a request's `urlconf` names."""

    handler400 = "kernel.rest.handler400"
    handler404 = "kernel.rest.handler404"
    handler500 = "kernel.rest.handler500"

    def __init__(self, services: Services) -> None:
        self.urlpatterns = _routes(services, self)


def _routes(services: Services, urlconf: URLConf) -> list[URLPattern | URLResolver]:
    hierarchy = {"hierarchy": services.hierarchy}
    revisions = {"revisions": services.revisions}
    graph_reads = {"graph_reads": services.graph_reads}
    entities = {"entities": services.entities}
    journal = {"journal": services.journal}
    packages = {"packages": services.sources.packages}
    source_registry = {"registry": services.registry}
    job_service = {"jobs": services.jobs}
    miner_service = {"miners": services.miners}
    trigger_service = {"triggers": services.triggers}
    return [
        path("api/health", views.HealthView.as_view()),
        path("api/status", views.StatusView.as_view(system=services.system)),
        path("api/config", views.ConfigView.as_view(configuration=services.configuration)),
        path("api/shutdown", views.ShutdownView.as_view(system=services.system)),
        path("api/auth/token", views.TokenView.as_view(tokens=services.tokens)),
        path("api/db", views.DatabaseConsoleView.as_view(console=services.console)),
        path("api/wings", palace.WingsView.as_view(**hierarchy)),
        path("api/wings/<str:wing>", palace.WingView.as_view(**hierarchy)),
        path("api/wings/<str:wing>/rooms", palace.RoomsView.as_view(**hierarchy)),
        path("api/wings/<str:wing>/rooms/<str:room>", palace.RoomView.as_view(**hierarchy)),
        path(
            "api/wings/<str:wing>/rooms/<str:room>/drawers",
            palace.DrawersView.as_view(**hierarchy, filing=services.filing),
        ),
        path(
            "api/wings/<str:wing>/rooms/<str:room>/drawers/<path:drawer>",
            palace.DrawerView.as_view(**hierarchy),
        ),
        path("api/drawers/<str:drawer_id>", palace.DrawerByIdView.as_view(**hierarchy)),
        path(
            "api/drawers/<str:drawer_id>/supersede",
            palace.DrawerSupersedeView.as_view(**revisions),
        ),
        path(
            "api/drawers/<str:drawer_id>/history",
            palace.DrawerHistoryView.as_view(**revisions),
        ),
        path(
            "api/drawers/<str:drawer_id>/duplicates",
            palace.DrawerDuplicatesView.as_view(filing=services.filing),
        ),
        path(
            "api/drawers/<str:drawer_id>/embedding",
            embeddings.DrawerEmbeddingView.as_view(embeddings=services.embeddings),
        ),
        path(
            "api/drawers/<str:drawer_id>/mentions",
            graph.DrawerMentionsView.as_view(**entities),
        ),
        path("api/entities", graph.EntitiesView.as_view(**graph_reads)),
        path("api/entities/<str:entity_id>", graph.EntityView.as_view(**graph_reads)),
        path(
            "api/entities/<str:entity_id>/relationships",
            graph.EntityRelationshipsView.as_view(**graph_reads),
        ),
        path(
            "api/entities/<str:entity_id>/mentions",
            graph.EntityMentionsView.as_view(**graph_reads),
        ),
        path(
            "api/entities/<str:entity_id>/candidates",
            graph.EntityCandidatesView.as_view(**graph_reads),
        ),
        path(
            "api/entities/<str:entity_id>/aliases",
            graph.EntityAliasesView.as_view(**entities),
        ),
        path(
            "api/relationships/<str:relationship_id>/history",
            graph.RelationshipHistoryView.as_view(**graph_reads),
        ),
        path("api/graph", graph.GraphView.as_view(**graph_reads)),
        path("api/notes", palace.NotesView.as_view(**journal)),
        path("api/diary", palace.DiaryView.as_view(**journal)),
        path("api/wake-up", palace.WakeUpView.as_view(**journal)),
        path("api/search", search.SearchView.as_view(search=services.search)),
        path("api/recall", search.RecallView.as_view(search=services.search)),
        path("api/jobs", jobs.JobsView.as_view(**job_service)),
        path("api/jobs/prune", jobs.JobsPruneView.as_view(**job_service)),
        path("api/jobs/<str:job_id>", jobs.JobView.as_view(**job_service)),
        re_path(
            r"^api/jobs/(?P<job_id>[^/]+)/(?P<action>pause|resume|cancel|force-cancel|retry)$",
            jobs.JobControlView.as_view(**job_service),
        ),
        path("api/sources", sources.SourcesView.as_view(sources=services.sources)),
        path("api/source-packages", sources.SourcePackagesView.as_view(**packages)),
        path("api/source-packages/<str:name>", sources.SourcePackageView.as_view(**packages)),
        path("api/source-packages/<str:name>/enable", sources.SourceEnableView.as_view(**packages)),
        path(
            "api/source-packages/<str:name>/disable",
            sources.SourceDisableView.as_view(**packages),
        ),
        path(
            "api/source-packages/<str:name>/auth",
            sources.SourceAuthView.as_view(sign_ins=services.sign_ins),
        ),
        path(
            "api/source-packages/<str:name>/auth/<str:flow>/wait",
            sources.SourceAuthWaitView.as_view(sign_ins=services.sign_ins),
        ),
        path("api/source-registry", registry.SourceRegistryView.as_view(**source_registry)),
        path(
            "api/source-registry/<str:spec>",
            registry.SourceRegistryEntryView.as_view(**source_registry),
        ),
        path(
            "api/source-registry/<str:spec>/install",
            registry.SourceRegistryInstallView.as_view(**source_registry),
        ),
        path(
            "api/source-registry/<str:name>/update",
            registry.SourceRegistryUpdateView.as_view(**source_registry),
        ),
        path("api/miners", miners.MinersView.as_view(**miner_service)),
        path("api/miners/reload", miners.MinersReloadView.as_view(**miner_service)),
        path("api/miners/<str:name>", miners.MinerView.as_view(**miner_service)),
        path("api/miners/<str:name>/enable", miners.MinerEnableView.as_view(**miner_service)),
        path("api/miners/<str:name>/disable", miners.MinerDisableView.as_view(**miner_service)),
        path("api/miners/<str:name>/run", miners.MinerRunView.as_view(**miner_service)),
        path("api/triggers", triggers.TriggersView.as_view(**trigger_service)),
        path("api/triggers/reload", triggers.TriggersReloadView.as_view(**trigger_service)),
        path("api/triggers/<str:name>", triggers.TriggerView.as_view(**trigger_service)),
        path(
            "api/triggers/<str:name>/enable",
            triggers.TriggerEnableView.as_view(**trigger_service),
        ),
        path(
            "api/triggers/<str:name>/disable",
            triggers.TriggerDisableView.as_view(**trigger_service),
        ),
        path("api/triggers/<str:name>/fire", triggers.TriggerFireView.as_view(**trigger_service)),
        path(
            "api/events",
            streams.event_stream(services.events, services.config.events_keepalive_secs),
        ),
        path("api/schema/", SpectacularAPIView.as_view(urlconf=urlconf), name="schema"),
        path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema")),
        re_path(
            r"^ui(?:/(?P<path>.*))?$",
            web.dashboard(web_enabled=services.config.web_enable),
        ),
    ]
