"""The web server's settings: `gunicorn -c config/gunicorn.py config.wsgi:application` (Docker, README, benchmark).

Threaded workers keep each browser's connection open between requests (an annotator makes two per item), which
gunicorn's default sync workers cannot. Several processes with a few threads each, rather than one process with many,
because a request spends most of its time in Python and each process has one GIL: on the 2-core development machine
4 x 4 served 20 annotators who never pause with the lowest tail latency of the shapes tried (see benchmarks/README.md).
Size `WEB_CONCURRENCY` (processes) to the cores and `WEB_THREADS` to the annotators working at once.
"""

from config.env import env_int, env_str

bind = env_str("WEB_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = env_int("WEB_CONCURRENCY", 4, minimum=1)
threads = env_int("WEB_THREADS", 4, minimum=1)
keepalive = 30  # seconds an idle browser connection stays open
timeout = 60
