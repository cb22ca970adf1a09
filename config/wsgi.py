"""The WSGI application, as the web server (config/web.py) loads it.

uWSGI loads this module once, in its master process, and forks the Django processes from it. Everything a request
needs is therefore loaded here rather than by each process's first request: the URLconf, and with it every view
module (the first request of each process otherwise waited for them).

Then `gc.freeze()` moves every object loaded so far out of the garbage collector's reach. They live as long as the
process, but Python's full collections would still walk all of them (over a hundred thousand once Django, DRF and the views
are in), in the middle of some request, every few hundred requests (figures in benchmarks/README.md). Frozen, the pages they sit on also stay
shared between the processes instead of being copied when a collection touches them.
"""

import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from config.hygiene import HttpHygiene

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = HttpHygiene(get_wsgi_application())  # HEAD without a body, 414 for an over-long request line
import_module(settings.ROOT_URLCONF)  # and with it every view module
gc.freeze()

# The embedded default (no broker) runs jobs in this process: resume those a stopped server left unfinished.
import_module("generation.jobs.runner").jobs_resume_on_start()
