"""REST views for jobs: parse, call `JobService`, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.services import ACTIONS, MAX_AGE_DAYS, JobService
from jobs.shapes import Job, JobList, JobsPruned
from jobs.states import Status
from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    errors,
    refuse_body_fields,
    request_context,
    service,
)

SUBMISSION = inline_serializer(
    "JobSubmission",
    {
        "type": serializers.CharField(help_text="the job kind, e.g. demo"),
        "steps": serializers.IntegerField(required=False, help_text="demo: steps, 5 by default"),
        "step_ms": serializers.IntegerField(
            required=False, help_text="demo: how long each step takes, 500 by default"
        ),
        "fail_at_step": serializers.IntegerField(
            required=False, help_text="demo: this step fails once, so retry can be tried"
        ),
        "payload": serializers.JSONField(
            required=False,
            help_text='checkpoint: {"items": [...]}, or that object JSON-encoded as a string',
        ),
        "emergency": serializers.BooleanField(
            required=False, help_text="checkpoint: run it first (critical priority)"
        ),
        "path": serializers.CharField(
            required=False,
            help_text="mine: the absolute path of a directory to mine (or give `source`)",
        ),
        "source": serializers.CharField(
            required=False, help_text="mine: the source to mine, as GET /api/sources lists them"
        ),
        "locator": serializers.CharField(
            required=False, help_text="mine: the place the source reads, e.g. a directory"
        ),
        "options": serializers.DictField(
            child=serializers.CharField(),
            required=False,
            help_text='mine: the source\'s options, e.g. {"since": "2026-09"}',
        ),
        "wing": serializers.CharField(
            required=False,
            help_text="mine: the wing to file into (else the source's default); "
            "embed: embed only this wing's drawers",
        ),
        "full": serializers.BooleanField(
            required=False, help_text="mine: read everything again, not only what changed"
        ),
        "scope": serializers.CharField(required=False, help_text="audit: one wing's name"),
        "dry_run": serializers.BooleanField(
            required=False, help_text="repair: only plan the deletions (true by default)"
        ),
        "based_on_job": serializers.CharField(
            required=False, help_text="repair: the completed audit whose findings to repair"
        ),
        "requested_by": serializers.CharField(required=False),
    },
)


# Every view of jobs calls `JobService`.
class JobServiceView(MemCastleView):
    jobs: JobService = service()


class JobsView(JobServiceView):
    query_parameters = ("status", "kind", "limit", "offset")

    @extend_schema(
        summary="List jobs, newest first",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("status", str, enum=[s.value for s in Status]),
            OpenApiParameter("kind", str, description="a job kind, e.g. demo"),
            OpenApiParameter("limit", int, description="50 by default, 0 means 50, at most 200"),
            OpenApiParameter("offset", int, description="jobs to skip"),
        ],
        responses={200: JobList, **errors(400, 403)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        return Response(
            self.jobs.list_jobs(
                request_context(request),
                status=params.get("status"),
                kind=params.get("kind"),
                limit=params.get("limit"),
                offset=params.get("offset"),
            )
        )

    @extend_schema(
        summary="Submit a job; it is returned at once, queued",
        parameters=[MODE_PARAMETER],
        request=SUBMISSION,
        responses={201: Job, **errors(400, 403)},
    )
    def post(self, request: Request) -> Response:
        ctx = request_context(request, body=request.data)
        return Response(self.jobs.submit(ctx, request.data), status=201)


class JobsPruneView(JobServiceView):
    @extend_schema(
        summary="Remove the jobs that finished more than older_than_days days ago (by default "
        "jobs.retention_days), with their records; what they filed stays",
        parameters=[MODE_PARAMETER],
        request=inline_serializer(
            "JobsPrune",
            {
                "older_than_days": serializers.IntegerField(
                    required=False,
                    min_value=0,
                    max_value=MAX_AGE_DAYS,
                    help_text="0 removes every finished job",
                ),
                "requested_by": serializers.CharField(required=False),
            },
        ),
        responses={200: JobsPruned, **errors(400, 403)},
    )
    def post(self, request: Request) -> Response:
        ctx = request_context(request, body=request.data)
        return Response(JobsPruned.render(self.jobs.prune(ctx, request.data)))


class JobView(JobServiceView):
    @extend_schema(
        summary="Show a job: status, progress, checkpoint and result",
        parameters=[MODE_PARAMETER],
        responses={200: Job, **errors(400, 403, 404)},
    )
    def get(self, request: Request, job_id: str) -> Response:
        return Response(self.jobs.show(request_context(request), job_id))


class JobControlView(JobServiceView):
    @extend_schema(
        summary="Pause, resume, cancel, force-cancel or retry a job (never mode-gated)",
        parameters=[OpenApiParameter("action", str, OpenApiParameter.PATH, enum=list(ACTIONS))],
        request=None,
        responses={200: Job, **errors(400, 404, 409)},
    )
    def post(self, request: Request, job_id: str, action: str) -> Response:
        refuse_body_fields(request)
        return Response(self.jobs.control(action, job_id))
