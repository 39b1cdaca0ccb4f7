# kts: the token authority for Apache Kafka. Two images from one Dockerfile:
#   docker build -t kts .                                  # the service (the default, last stage): no Spark, no Java
#   docker build --target analytics -t kts-analytics .     # kts audit-export / audit-report: kts-kafka[analytics] and a JRE
#   docker run -e KTS_ZOOKEEPER_CONNECT=zk:2181 -e KTS_DELEGATION_TOKEN_SECRET_KEY=... -p 8080:8080 kts
# Every setting comes from a KTS_* variable or a properties file given with `serve --config FILE`.

# --- builder: a virtual environment holding kts and its runtime dependencies, nothing else -------------------
FROM python:3.11-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

RUN python -m venv /opt/venv

WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install --no-cache-dir .

# kts finds its alembic revisions next to the installed `app` package (see MIGRATIONS in
# app/storage/audit/migrations.py), and a wheel carries only `app`: put them where that code looks, then
# prove it finds the head revision. `python -P` keeps /src/app off sys.path so the installed copy answers.
COPY migrations ./migrations
WORKDIR /
RUN target="$(python -P -c 'from app.storage.audit.migrations import MIGRATIONS; print(MIGRATIONS)')" \
    && cp -r /src/migrations "$target" \
    && python -m compileall -q "$target" \
    && python -P -c 'from app.storage.audit.migrations import head_revision; print("audit schema head:", head_revision())'

# --- analytics-builder: the same environment plus the analytics extra (pyspark, pyarrow, matplotlib) ----------
FROM builder AS analytics-builder
RUN pip install --no-cache-dir "/src[analytics]"

# --- base: what both images share ------------------------------------------------------------------------------
FROM python:3.11-slim-bookworm AS base

# A fixed numeric UID/GID, so Kubernetes can check runAsNonRoot and volumes can be shared by number.
RUN groupadd --system --gid 10001 kts \
    && useradd --system --no-log-init --uid 10001 --gid 10001 --home-dir /var/lib/kts --create-home \
       --shell /usr/sbin/nologin kts

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /var/lib/kts

# --- analytics: `kts audit-export` and `kts audit-report` (Spark in local mode needs a Java runtime) -----------
FROM base AS analytics

# Debian's Java 17 runtime for Spark's JVM, and its JDBC drivers for `kts audit-report --db` (Spark finds them in
# /usr/share/java). Versions pinned to their series, so security updates still apply. Slim images leave out the
# man page directories that the JRE's post-install script writes symlinks into.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends \
       openjdk-17-jre-headless=17.0.* \
       libpostgresql-jdbc-java=42.5.* \
       libxerial-sqlite-jdbc-java=3.40.* \
    && rm -rf /var/lib/apt/lists/*

COPY --from=analytics-builder /opt/venv /opt/venv

# Spark writes its scratch files under HOME and /tmp; both belong to the user (or to mounted volumes).
ENV HOME=/var/lib/kts
USER 10001:10001

ENTRYPOINT ["kts"]
CMD ["audit-report", "--help"]

# --- runtime: the service (the default target) -----------------------------------------------------------------
FROM base AS runtime

COPY --from=builder /opt/venv /opt/venv

ENV KTS_HTTP_LISTENERS=http://0.0.0.0:8080

# The default SQLite audit database (sqlite:///./kts-audit.db) lands in the user's own directory.
USER 10001:10001
EXPOSE 8080

# No curl in a slim image: ask /healthz with Python, on the port KTS_HTTP_MANAGEMENT_LISTENERS names when it is
# set (outside the connection caps clients may fill), else KTS_HTTP_LISTENERS. The check talks to this very
# process, so an https listener's certificate is not verified here.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, ssl, urllib.parse as p, urllib.request as r; u = p.urlsplit(os.environ.get('KTS_HTTP_MANAGEMENT_LISTENERS') or os.environ.get('KTS_HTTP_LISTENERS', 'http://127.0.0.1:8080')); r.urlopen(f\"{u.scheme}://127.0.0.1:{u.port or (443 if u.scheme == 'https' else 80)}/healthz\", timeout=4, context=ssl._create_unverified_context())"]

ENTRYPOINT ["kts"]
CMD ["serve"]
