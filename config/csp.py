"""The Content-Security-Policy middleware: django-csp's, with the headers built once rather than for every response.

django-csp rebuilds both headers (the policy and the report-only one) from the settings for every response, a
measurable share of an annotator API call (benchmarks/README.md). Concord's policy has no nonce and no view changes it
(no `csp_update`, `csp_replace`, `csp_exempt` decorators), so the headers are the same for every response: they are
built on first use, and again after a test changes the settings. A response or request that does carry something of
its own (a nonce was asked for, a decorator set a per-response policy) still goes through django-csp's own path, so
the package's behaviour is kept whole.
"""

from __future__ import annotations

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as BaseCSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

# What django-csp's decorators set on a response; any of them means the policy is that response's own.
_PER_RESPONSE = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_exempt",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
    "_csp_exempt_ro",
)

# (header, value, excluded path prefixes) for each header the settings ask for; None until first built.
_headers: list[tuple[str, str, tuple[str, ...]]] | None = None


def _built() -> list[tuple[str, str, tuple[str, ...]]]:
    global _headers
    if _headers is None:
        headers = []
        for name, setting, report_only in (
            (HEADER, "CONTENT_SECURITY_POLICY", False),
            (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", True),
        ):
            if value := build_policy(report_only=report_only):
                prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
                headers.append((name, value, tuple(prefixes)))
        _headers = headers
    return _headers


@receiver(setting_changed)
def _forget(*, setting: str, **kwargs) -> None:
    global _headers
    if setting.startswith("CONTENT_SECURITY_POLICY") or setting == "DEBUG":
        _headers = None


class CSPMiddleware(BaseCSPMiddleware):
    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(hasattr(response, a) for a in _PER_RESPONSE):
            return super().process_response(request, response)
        if response.status_code in (404, 500) and settings.DEBUG:  # django-csp leaves the debug pages alone
            return response
        for name, value, prefixes in _built():
            if name not in response and not request.path_info.startswith(prefixes):
                response[name] = value
        # As django-csp does: a nonce asked for after the header is written is an error, not a silent gap.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response
