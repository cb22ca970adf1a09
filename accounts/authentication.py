"""API token authentication: DRF's `TokenAuthentication` ("Authorization: Token KEY"), with the same errors, plus
"Token has expired." for a token older than `API_TOKEN_TTL` (which is then deleted: the client asks
`POST /api/auth/token/` for a new one).

The token, its user and the user's roles are read in one statement, and the roles are kept on the user for the
request (`accounts.roles.roles_remember`), so the permission check asks nothing more. This is the annotator API's
hot path: DRF's own lookup (a `select_related` query) plus the roles query cost about as much server CPU as the
save itself (benchmarks/README.md, "Annotation API").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Field
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from accounts.roles import ROLES, roles_remember
from accounts.services import token_is_expired

KEY_LENGTH = Token._meta.get_field("key").max_length


@dataclass(frozen=True)
class _Lookup:
    sql: str
    fields: list[Field]  # the token's `created`, then the user's concrete fields, in the statement's order
    columns: list  # the fields' column expressions, which the conversions take
    converters: list[list]  # per column: the database's and the field's conversions of what the driver returns


@cache
def _lookup() -> _Lookup:
    user_model = get_user_model()
    quote = connection.ops.quote_name
    memberships = user_model.groups.through._meta.db_table
    user_fields = [field for field in user_model._meta.concrete_fields]
    fields: list[Field] = [Token._meta.get_field("created"), *user_fields]  # type: ignore[list-item]
    roles = ", ".join(
        f"EXISTS (SELECT 1 FROM {quote(memberships)} m JOIN {quote(Group._meta.db_table)} g ON g.id = m.group_id "
        f"WHERE m.user_id = u.id AND g.name = '{role}')"
        for role in ROLES  # constants of this module's own, not input
    )
    columns = ", ".join(f"u.{quote(field.column)}" for field in user_fields)
    sql = (
        f"SELECT t.{quote('created')}, {columns}, {roles} FROM {quote(Token._meta.db_table)} t "
        f"JOIN {quote(user_model._meta.db_table)} u ON u.id = t.user_id WHERE t.{quote('key')} = %s"
    )
    cols = [field.get_col(table) for field, table in zip(fields, ["t"] + ["u"] * len(user_fields), strict=True)]
    converters = [connection.ops.get_db_converters(col) + col.get_db_converters(connection) for col in cols]
    return _Lookup(sql=sql, fields=fields, columns=cols, converters=converters)


def _convert(value, column, converters: list):
    for converter in converters:
        value = converter(value, column, connection)
    return value


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str):
        if len(key) > KEY_LENGTH or "\x00" in key:  # no such token; PostgreSQL would refuse the NUL outright
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        lookup = _lookup()
        with connection.cursor() as cursor:
            cursor.execute(lookup.sql, [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        values = [
            _convert(value, column, converters)
            for value, column, converters in zip(row, lookup.columns, lookup.converters, strict=False)
        ]
        created, *user_values = values
        user = get_user_model().from_db(connection.alias, [f.attname for f in lookup.fields[1:]], user_values)
        token = Token(key=key, user=user, created=created)
        token._state.adding, token._state.db = False, connection.alias
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if token_is_expired(created=created):
            token.delete()
            raise exceptions.AuthenticationFailed(_("Token has expired."))
        member_of = row[len(lookup.fields) :]
        roles_remember(user, [role for role, member in zip(ROLES, member_of, strict=True) if member])
        return user, token
