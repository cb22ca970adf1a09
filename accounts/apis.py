from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import AllowAny


class TokenObtainApi(ObtainAuthToken):
    """POST username and password, get {"token": ...}. No session, so no CSRF token is needed."""

    permission_classes = [AllowAny]
    authentication_classes = []
