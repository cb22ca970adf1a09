from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, has_role


def roles(request):
    user = request.user
    return {
        "is_annotator": has_role(user, ANNOTATOR),
        "is_researcher": has_role(user, RESEARCHER),
        "is_admin": has_role(user, ADMIN),
    }
