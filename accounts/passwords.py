"""A changed password revokes the user's API tokens.

Django tells the configured password validators when a password has been changed and saved (`password_changed`,
called by `AbstractBaseUser.save`), whichever way it changed: `set_password` in `create_user`, the admin's password
form, `manage.py changepassword`. That hook is where a token issued under the old password is revoked; this class
checks nothing about the password itself.
"""

from __future__ import annotations

from accounts.services import tokens_revoke


class RevokeApiTokensOnChange:
    def validate(self, password: str, user=None) -> None:
        return None

    def password_changed(self, password: str, user=None) -> None:
        if user is not None and user.pk is not None:
            tokens_revoke(user=user)

    def get_help_text(self) -> str:
        return "Changing the password signs out every API client of this account (its tokens are revoked)."
