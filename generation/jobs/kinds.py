"""Job kinds: what a job does with its chunks, registered by name. Generation is one kind; other apps add theirs.

Every job (a `Job` row, whatever its kind) gets the same machinery: validation of its parameters
(generation/parameters.py), chunks with leases and heartbeats, bounded retries of transient errors, progress and the
estimate of the time left, cancel (final), resume after a crash, the jobs page and the API. A kind says only what
its work is, through a handler, a subclass of `JobKind`:

- `units(params=...)`: the ids of the job's work units, in order (generation: its instances); they are cut into
  chunks (`JobChunk.unit_ids`) of at most the batch size.
- `items_per_unit(params=...)`: how many result rows one unit gives (generation: settings x samples); the job's
  `total_items` is units x this, and `done_items` counts them (`total_units`, `done_units`: the units).
- `run_chunk(job=..., chunk=..., stop=..., step_done=...)`: do one chunk's units. It must be idempotent (a chunk can
  run again after a crash: skip what is stored, insert with the database's unique constraints), call `stop()` between
  batches and return False at once when it says True (the job was cancelled or the lease lost), write its rows with
  `job_rows_write` (generation/jobs/progress.py, which writes nothing once the job is cancelled), and call
  `step_done()` after each written batch so that progress moves. Return True when every unit is stored.
- `counts(job=...)`: (done units, done items), recounted from the stored rows (a re-run never counts twice).
- `describe(job=...)`: one line for the jobs page ("judge smollm2 on pool 3").
- `rows_create(job=..., params=...)`: write the kind's own row for a new job (its parameters, in the kind's table:
  `GenerationRun`, `JudgeRun`), in the transaction that creates the job, so that no worker ever makes it; and
  `parameters(job=...)`: those parameters as a dict keyed as the jobs API gives them (a generation job's
  `pronouns`, `samples`, ...; every kind's `options`), for the API, the bundle's manifest and the audit trail. A kind without a
  table of its own keeps the default: its validated `options` stay in the job's `options` (`options_kept`).
- optional: `needs_dataset` (False for a kind without one; the pages then show the description instead),
  `options_validate(options=..., values=...)` to check the kind's `options` (raise
  `rest_framework.serializers.ValidationError`), `chunk_finished(job=..., unit_ids=...)` after a chunk is stored,
  `nothing_to_do(params=...)` to say why a job has no units, and `unit_label` / `item_label` ("units" / "items";
  generation: "instances" / "generations"), `facts(job=...)` for the job's page (name -> value).

An upload's kinds (a pool's import, a templates dataset's) run on the same machinery with a few switches:
`needs_model = False` (the job's `model` is empty), `listed = False` (not on the jobs page and API, nor among the
jobs `resume_jobs` lists: their own pages show them, and `resume_jobs` lists them under "imports", `resume_entry`),
`runs_alone = False` (without a broker, a thread of its own rather than a turn in the one-at-a-time run order that
the model-loading kinds share), `queue` (the Celery queue of its chunks; None: the generation queue and its engine
routing), and `failure_final = True` (a failed one is not resumed: its stored input is deleted as it fails, as when
it is done or cancelled; generation/jobs/inputs.py). A kind that stores input keeps it in `JobInput` rows.

Register from the owning app's `AppConfig.ready()`: `job_kind_register("judge", JudgeKind())`. Create a job with
`generation.jobs.services.job_create(kind="judge", model=..., options={...})`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from generation.models import Job, JobChunk

# A validated job, `generation.parameters.JobParameters` (a handler may name it: `JobKind[JobParameters]`). This
# module does not import it: the parameters' validation reads this registry, so the dependency runs that way only.
Params = TypeVar("Params")


class JobKind(Generic[Params]):
    """The interface of a job kind's handler (see the module docstring); subclass it and override what applies."""

    needs_dataset: bool = True
    # The lookups that read the kind's own row with its job (select_related), for the jobs list.
    rows_related: tuple[str, ...] = ()
    unit_label: str = "units"
    item_label: str = "items"
    needs_model: bool = True
    listed: bool = True
    runs_alone: bool = True
    queue: str | None = None
    failure_final: bool = False

    def options_validate(self, *, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        return options

    def options_kept(self, *, params: Params) -> dict[str, Any]:
        """What the job keeps in its `options`: a kind without a table of its own keeps its validated options."""
        return dict(params.options)  # type: ignore[attr-defined]

    def rows_create(self, *, job: Job, params: Params) -> None:
        return None

    def parameters(self, *, job: Job) -> dict[str, Any]:
        return {"options": dict(job.options)}

    def units(self, *, params: Params) -> list[int]:
        raise NotImplementedError

    def items_per_unit(self, *, params: Params) -> int:
        return 1

    def run_chunk(self, *, job: Job, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]) -> bool:
        raise NotImplementedError

    def counts(self, *, job: Job) -> tuple[int, int]:
        raise NotImplementedError

    def describe(self, *, job: Job) -> str:
        return f"{job.kind} with {job.model.name}"

    def chunk_finished(self, *, job: Job, unit_ids: list[int]) -> None:
        return None

    def facts(self, *, job: Job) -> dict[str, Any]:
        """What the job's page says of its results beyond progress (a judge run: its unparsed replies)."""
        return {}

    def resume_entry(self, *, job: Job) -> dict[str, Any]:
        """What `resume_jobs` prints of an unlisted kind's job it resumed, under "imports"."""
        return {"job": job.pk, "status": job.status}

    def nothing_to_do(self, *, params: Params) -> dict[str, str] | None:
        """Why a job has no units, under the field to blame; None: the job services say it in general terms."""
        return None


_KINDS: dict[str, JobKind[Any]] = {}


def job_kind_register(name: str, handler: JobKind[Any]) -> None:
    """Register (or replace, e.g. in a test) the handler of a job kind."""
    if not name or len(name) > 32:
        raise ValueError(f"a job kind's name has 1 to 32 characters, got {name!r}")
    _KINDS[name] = handler


def job_kind_get(name: str) -> JobKind[Any] | None:
    return _KINDS.get(name)


def job_kind_handler(name: str) -> JobKind[Any]:
    """The handler of a stored job's kind; a kind whose app is not installed is an error that names it."""
    handler = _KINDS.get(name)
    if handler is None:
        raise LookupError(f"job kind {name!r} is not registered here (registered: {', '.join(job_kinds())})")
    return handler


def job_kinds() -> list[str]:
    return sorted(_KINDS)


def job_kinds_unlisted() -> list[str]:
    """The kinds whose jobs the jobs page, the jobs API and the jobs `resume_jobs` lists leave out (uploads)."""
    return sorted(name for name, handler in _KINDS.items() if not handler.listed)
