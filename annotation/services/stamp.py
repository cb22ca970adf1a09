"""The pool's change stamp (`PoolStamp`): every write that changes what a pool's report or quality page reads calls
`pool_changed`, and the report cache is keyed by `pool_stamp` (analysis/services.py).

Bulk writes, queryset updates and the annotator's SQL path send no model signals, so the services call it themselves,
after their rows are written and inside their transaction: a write that rolls back takes its bump back with it. A job's
progress reaches the stamp through `generation.signals.jobs_changed` (annotation/apps.py, judging/hooks.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import cache

from django.db import connection
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery

from annotation.models import Pool, PoolStamp


def pool_changed(*, pools: Iterable[Pool | int]) -> None:
    """Give each of `pools` (rows or ids) a new stamp, so no report cached under the old one answers again."""
    ids = sorted({pool if isinstance(pool, int) else pool.pk for pool in pools})
    if not ids:
        return
    if len(ids) == 1:
        # One pool, as after nearly every write: the statement below, compiled once per database rather than on
        # every call (the compiling cost more than the statement).
        with connection.cursor() as cursor:
            cursor.execute(_one_bump_sql(connection.vendor), [ids[0], uuid.uuid4().hex])
        return
    PoolStamp.objects.bulk_create(
        [PoolStamp(pool_id=pk, token=uuid.uuid4().hex) for pk in ids],
        update_conflicts=True,
        unique_fields=["pool"],
        update_fields=["token"],
    )


@cache
def _one_bump_sql(vendor: str) -> str:
    """The statement `pool_changed`'s `bulk_create` writes for one pool on this database (`vendor` keys the cache):
    its parameters are the pool's id and the new token."""
    pool, token = PoolStamp._meta.get_field("pool"), PoolStamp._meta.get_field("token")
    query = InsertQuery(PoolStamp, on_conflict=OnConflict.UPDATE, update_fields=[token], unique_fields=[pool])
    query.insert_values([pool, token], [PoolStamp(pool_id=0, token="")])
    [(sql, _params)] = query.get_compiler(connection=connection).as_sql()
    return sql


def pool_stamp(*, pool: Pool | int) -> str:
    """The pool's stamp: one indexed read. A pool never bumped since it was made reads as "0"."""
    pk = pool if isinstance(pool, int) else pool.pk
    return PoolStamp.objects.filter(pool_id=pk).values_list("token", flat=True).first() or "0"


def job_pools_changed(*, job_ids: Iterable[int]) -> None:
    """The pools drawn from these generation jobs changed: their jobs' rows or progress did. Read from the pools'
    links to their jobs alone, without the join to the pools (any job's progress asks it)."""
    links = Pool.jobs.through.objects.filter(job_id__in=list(job_ids))
    pool_changed(pools=links.values_list("pool_id", flat=True))
