# One image for web, worker, beat and the demo host.

# The charts' library (uPlot), installed from the lock file in a stage of its own so
# the image carries its two served files and no Node.
FROM node:20-bookworm-slim AS front
WORKDIR /front
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error \
 && mkdir vendor \
 && cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css vendor/

FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    POZOL_STATIC_ROOT=/app/.staticfiles DJANGO_SETTINGS_MODULE=pozol.settings

# The demo host needs zfs-fuse, sshd and PostgreSQL 15; the control plane needs
# only the client libraries, but one image keeps the compose file simple.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      zfs-fuse openssh-server postgresql-15 postgresql-client-15 util-linux procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt constraints.txt ./
RUN pip install --no-cache-dir -r requirements.txt -c constraints.txt
COPY . .
COPY --from=front /front/vendor/ static/vendor/
RUN POZOL_SECRET_KEY=build POZOL_DATABASE_URL=sqlite:////tmp/build.sqlite3 \
    python manage.py collectstatic --no-input -v 0

EXPOSE 8000
CMD ["gunicorn", "pozol.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3"]
