"""The shapes of what the job service answers: a job, a page of jobs, and the counts the status
report carries (see `kernel.shapes`; a docstring would become a component's description)."""

from __future__ import annotations

from rest_framework import serializers

from jobs.states import Status
from kernel.shapes import Shape

STATUSES = [status.value for status in Status]


class JobProgress(Shape):
    current = serializers.IntegerField()
    total = serializers.IntegerField(required=False)
    message = serializers.CharField(required=False)


# A job's record (jobs.md): the optional fields are null until set.
class Job(Shape):
    id = serializers.UUIDField()
    kind = serializers.DictField(help_text="the submitted body: `type` and its parameters")
    status = serializers.ChoiceField(STATUSES)
    priority = serializers.IntegerField(help_text="100 critical ... 0 background")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    requested_by = serializers.CharField()
    progress = JobProgress()
    attempt = serializers.IntegerField(help_text="claims so far")
    recovery_attempts = serializers.IntegerField(help_text="crashes survived")
    max_attempts = serializers.IntegerField(help_text="crash budget")
    checkpoint = serializers.DictField(help_text="the handler's resume state")
    result = serializers.DictField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    error_code = serializers.CharField(allow_null=True)
    lease_owner = serializers.CharField(allow_null=True)
    lease_expires_at = serializers.DateTimeField(allow_null=True)
    pause_requested = serializers.BooleanField()
    cancel_requested = serializers.BooleanField()


class JobList(Shape):
    jobs = serializers.ListField(child=Job())
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


# Jobs in each status (`JobService.counts`), every status present.
class JobCounts(Shape):
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    paused = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class JobsPruned(Shape):
    removed = serializers.IntegerField(help_text="finished jobs removed")
    finished_before = serializers.DateTimeField(help_text="those that ended before this")
