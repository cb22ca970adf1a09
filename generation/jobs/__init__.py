"""The job machinery: any long run cut into chunks, whatever its kind (generation, judge, ...).

- `kinds.py`: the registry of job kinds and the `JobKind` interface a kind implements (what its units are and how
  one chunk of them runs); `generation_kind.py` is the generation kind, registered by this app, and judging/kinds.py
  the judge kind, registered by judging.
- `services.py`: what a job is (validate, create with its chunks, cancel, resume).
- `progress.py`: a job's state as its chunks run (started, progress recounted, done, failed, queued again).
- `leases.py`: chunk leases and heartbeats (a chunk runs in one place at a time; a lost runner's chunk is taken over).
- `chunks.py`: running one chunk under its lease, with bounded retries of transient errors.
- `runner.py`: where a job runs (Celery workers, or a thread of the web process), the workers' sweeper, the
  start-up resume.
- `inputs.py`: a job's input, the files an upload's job was given, stored in pieces with the job until it ends.
- `uploads.py`: the upload kinds' common part (one chunk, not listed with the jobs, a failure final); the templates
  dataset's kind is `dataset_import_kind.py`, a pool's import annotation's `pool_import` kind.
- `cli.py`: the progress bars of the commands that run or follow a job (`generate`, `resume_jobs`, `judge`).

Layers (no import cycle): kinds, leases <- progress <- chunks <- runner <- services <- cli; a kind's module imports
kinds and progress. The Celery tasks (generation/tasks.py) import the chunk runner; the runner imports the tasks only
inside the function that queues them. This package's `__init__` imports nothing, so importing one module does not
load the others (nor an engine).
"""
