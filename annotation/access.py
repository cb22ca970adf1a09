"""Which pools a person may see and run (docs/domain.md, "Projects"): the one check every pool-scoped page, API and
download makes, on top of its role.

A researcher sees the pools of their projects and nothing of any other: a pool of another project answers 404, as a
pool that does not exist does, so that its name does not leak. An admin sees every pool. Assigning annotators is for
admins and for the researcher who made the pool.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404
from rest_framework.permissions import BasePermission

from accounts.roles import ADMIN, RESEARCHER, has_role
from annotation.models import Pool


def pools_visible_to(*, user, pools: QuerySet[Pool] | None = None) -> QuerySet[Pool]:
    """`pools` (default: every pool) narrowed to those `user` may see."""
    pools = Pool.objects.all() if pools is None else pools
    if has_role(user, ADMIN):
        return pools
    if not getattr(user, "is_authenticated", False):
        return pools.none()
    return pools.filter(project__members=user)


def pool_visible_or_404(*, user, name: str, pools: QuerySet[Pool] | None = None) -> Pool:
    """The pool named `name` if `user` may see it; else 404, whether it exists or not."""
    pool = pools_visible_to(user=user, pools=pools).filter(name=name).first()
    if pool is None:
        raise Http404("No such pool.")
    return pool


# Led by the admin role's own refusal (accounts.roles.IsAdmin), as every role refusal of the API is.
ASSIGN_REFUSED = "Only admins may do this. A researcher assigns the annotators of the pools they made."


def pool_may_assign(*, user, pool: Pool) -> bool:
    """Admins assign any pool; a researcher the pools they made (a pool of files, an escalation)."""
    return has_role(user, ADMIN) or (pool.created_by_id is not None and pool.created_by_id == user.pk)


class MayAssignPool(BasePermission):
    """DRF's check for a pool's assignment API (`name` in the address): a researcher who may see the pool (else 404)
    and made it, or an admin."""

    message = ASSIGN_REFUSED

    def has_permission(self, request, view) -> bool:
        if not has_role(request.user, RESEARCHER):
            return False
        pool = pool_visible_or_404(user=request.user, name=view.kwargs["name"])
        return pool_may_assign(user=request.user, pool=pool)


def audit_hidden(reader) -> Q | None:
    """The audit entries on pools `reader` may not see, and on their imports, annotations and adjudications
    (common.audit's hook; an admin sees them all)."""
    from django.contrib.contenttypes.models import ContentType

    from annotation.models import Adjudication, Annotation, PoolImport

    if has_role(reader, ADMIN):
        return None
    visible = pools_visible_to(user=reader)
    hidden = Q()
    for model, rows in (
        (Pool, visible),
        (PoolImport, PoolImport.objects.filter(pool__in=visible)),
        (Annotation, Annotation.objects.filter(item__pool__in=visible)),
        (Adjudication, Adjudication.objects.filter(item__pool__in=visible)),
    ):
        hidden |= Q(content_type=ContentType.objects.get_for_model(model)) & ~Q(object_id__in=rows.values("pk"))
    return hidden
