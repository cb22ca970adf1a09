"""API token authentication that loads the token's user and the user's roles in one query.

Every annotator API call authenticates and then checks a role: with DRF's own class that is two ORM queries (token
and user, then the user's groups) on the API's hot path, and building them costs more Python than the database spends
answering. Otherwise it behaves exactly as `rest_framework.authentication.TokenAuthentication` ("Authorization:
Token KEY"), with the same errors.
"""

from __future__ import annotations

from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from accounts.roles import ROLES, roles_remember


@cache
def _query() -> tuple[str, list[str], list[tuple]]:
    """The SQL, the user's field names in its column order, and the converters that turn columns into field values.

    A plain cursor and `Model.from_db` rather than `Manager.raw()`, which works out the same column mapping and
    converters again for every request (about a third of this request's Python).
    """
    user_model = get_user_model()
    quote = connection.ops.quote_name
    fields = user_model._meta.concrete_fields
    user_pk = quote(user_model._meta.pk.column)
    # The user's roles as a bit set (bit i: ROLES[i]); group names are unique, so the sum is exact.
    cases = " ".join(f"WHEN %s THEN {1 << i}" for i in range(len(ROLES)))
    sql = (
        f"SELECT {', '.join(f'u.{quote(field.column)}' for field in fields)},"
        f" (SELECT COALESCE(SUM(CASE g.name {cases} ELSE 0 END), 0)"
        f" FROM {quote(user_model.groups.through._meta.db_table)} m"
        f" JOIN {quote(Group._meta.db_table)} g ON g.id = m.group_id WHERE m.user_id = u.{user_pk})"
        f" FROM {quote(Token._meta.db_table)} t JOIN {quote(user_model._meta.db_table)} u ON u.{user_pk} = t.user_id"
        f" WHERE t.{quote(Token._meta.pk.column)} = %s"
    )
    # What the ORM would apply to these columns (SQLite, for one, returns datetimes as text).
    converters = []
    for index, field in enumerate(fields):
        column = field.get_col(user_model._meta.db_table)
        if functions := connection.ops.get_db_converters(column) + column.get_db_converters(connection):
            converters.append((index, column, functions))
    return sql, [field.attname for field in fields], converters


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str):
        sql, field_names, converters = _query()
        with connection.cursor() as cursor:
            cursor.execute(sql, [*ROLES, key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        *values, role_bits = row
        for index, column, functions in converters:
            for function in functions:
                values[index] = function(values[index], column, connection)
        user = get_user_model().from_db(connection.alias, field_names, values)
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        roles_remember(user, [role for i, role in enumerate(ROLES) if role_bits >> i & 1])
        # The token as the ORM represents a partly loaded row: `created`, not selected, would load on access.
        token = Token.from_db(connection.alias, ["key", "user_id"], [key, user.pk])
        token.user = user
        return user, token
