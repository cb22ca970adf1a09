"""API token authentication that loads the token's user and the user's roles in one query, and refuses expired tokens.

Every annotator API call authenticates and then checks a role: with DRF's own class that is two ORM queries (token
and user, then the user's groups) on the API's hot path, and building them costs more Python than the database spends
answering. Otherwise it behaves exactly as `rest_framework.authentication.TokenAuthentication` ("Authorization:
Token KEY"), with the same errors, plus "Token has expired." for a token older than `API_TOKEN_TTL` (which is then
deleted: the client asks `POST /api/auth/token/` for a new one).
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
from accounts.services import token_is_expired

KEY_LENGTH = Token._meta.get_field("key").max_length


@cache
def _query() -> tuple[str, list[str], list[tuple]]:
    """The SQL, the user's field names in its column order, and the converters that turn columns into field values
    (the user's fields, then the token's `created`, then the role bits).

    A plain cursor and `Model.from_db` rather than `Manager.raw()`, which works out the same column mapping and
    converters again for every request (about a third of this request's Python).
    """
    user_model = get_user_model()
    quote = connection.ops.quote_name
    fields = user_model._meta.concrete_fields
    user_pk = quote(user_model._meta.pk.column)
    # The user's roles as a bit set (bit i: ROLES[i]); group names are unique, so the sum is exact.
    cases = " ".join(f"WHEN %s THEN {1 << i}" for i in range(len(ROLES)))
    created = Token._meta.get_field("created")
    sql = (
        f"SELECT {', '.join(f'u.{quote(field.column)}' for field in fields)}, t.{quote(created.column)},"
        f" (SELECT COALESCE(SUM(CASE g.name {cases} ELSE 0 END), 0)"
        f" FROM {quote(user_model.groups.through._meta.db_table)} m"
        f" JOIN {quote(Group._meta.db_table)} g ON g.id = m.group_id WHERE m.user_id = u.{user_pk})"
        f" FROM {quote(Token._meta.db_table)} t JOIN {quote(user_model._meta.db_table)} u ON u.{user_pk} = t.user_id"
        f" WHERE t.{quote(Token._meta.pk.column)} = %s"
    )
    # What the ORM would apply to these columns (SQLite, for one, returns datetimes as text).
    converters = []
    for index, field in enumerate([*fields, created]):
        column = field.get_col(field.model._meta.db_table)
        if functions := connection.ops.get_db_converters(column) + column.get_db_converters(connection):
            converters.append((index, column, functions))
    return sql, [field.attname for field in fields], converters


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str):
        if len(key) > KEY_LENGTH or "\x00" in key:  # no such token; PostgreSQL would refuse the NUL outright
            raise exceptions.AuthenticationFailed(_("Invalid token."))
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
        *values, created = values
        user = get_user_model().from_db(connection.alias, field_names, values)
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if token_is_expired(created=created):
            Token.objects.filter(pk=key).delete()
            raise exceptions.AuthenticationFailed(_("Token has expired."))
        roles_remember(user, [role for i, role in enumerate(ROLES) if role_bits >> i & 1])
        token = Token.from_db(connection.alias, ["key", "user_id", "created"], [key, user.pk, created])
        token.user = user
        return user, token
