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
