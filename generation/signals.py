"""What the generation pipeline tells other apps. Generation imports nothing from them: an app that needs to act when
generations are written connects a receiver (in its AppConfig.ready()), e.g. analysis caches repetition rates.

Both are sent once the rows they speak of are committed, with `sender=Job`. A receiver's error is logged
and never fails the generation job (`send_robust`).
"""

from django.dispatch import Signal

# A chunk finished: every generation of `instance_ids` in job `job_id` is stored.
chunk_finished = Signal()  # kwargs: job_id: int, instance_ids: list[int]

# A job's rows, progress or state changed (a chunk's rows counted, a failure, a resume, a cancel, Prob-TANGO rows):
# what is drawn from the job (a pool's report) is out of date. Sent inside the writer's transaction, so a receiver's
# writes commit or roll back with it.
jobs_changed = Signal()  # kwargs: job_ids: list[int]

# A job ended with every row written (status "done").
job_finished = Signal()  # kwargs: job_id: int

# The embedded default (no broker) is resuming what a stopped web process left unfinished, in its resume thread,
# before the generation jobs; other apps restart their own background work (annotation: imports). Sent with
# `sender=None` and `started_before`, the time this server started: anything of theirs created earlier was left by an
# earlier process.
resuming_on_start = Signal()  # kwargs: started_before: datetime

# A Celery worker's sweeper is looking for work whose runner is gone, every few seconds (generation/jobs/runner.py,
# after the chunks); other apps take over their own leased work (annotation: imports whose worker died). Sent with
# `sender=None`; a receiver returns the ids it queued again.
sweeping = Signal()

# `resume_jobs` is resuming what did not finish, after the generation jobs' stale chunks; other apps resume their own
# (annotation: imports left queued, reading or writing by a runner that is gone). Sent with `sender=None` and
# `foreground` (True without a broker: run them here, to their end); a receiver returns a list of
# {"import": id, "status": ...} dicts, one per thing resumed.
resuming_jobs = Signal()  # kwargs: foreground: bool
