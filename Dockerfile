# kioku in a container: the wheel built from this tree, installed by scripts/install_kioku.sh
# (the same script tests/packaging/test_wheel.py runs), served by a non-root user, data in a
# volume. Build and run:
#   docker build -t kioku .
#   docker run -p 8765:8765 -v kioku-data:/data kioku
#   docker exec -it <container> kioku keys create me --role owner   # a key for your agent
# With PostgreSQL + pgvector: compose.yaml.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install --no-cache-dir "hatchling>=1.27" \
 && python -m hatchling build --target wheel --directory /dist

FROM python:3.11-slim
COPY scripts/install_kioku.sh /usr/local/bin/install_kioku.sh
COPY --from=build /dist /dist
# The postgres extra (psycopg, its pool, pgvector) so one image serves either database.
RUN install_kioku.sh /opt/kioku "$(ls /dist/*.whl)[postgres]" \
 && rm -rf /dist \
 && useradd --system --uid 10001 --home-dir /data kioku \
 && mkdir -p /data && chown kioku:kioku /data && chmod 0700 /data
ENV PATH=/opt/kioku/bin:$PATH \
    HF_HUB_OFFLINE=1 \
    KIOKU_DATABASE_URL=sqlite:////data/kioku.db
USER kioku
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/health', timeout=4)"]
# Without --dev every request needs an API key (kioku keys create); /health needs none.
CMD ["kioku", "serve", "--host", "0.0.0.0", "--port", "8765"]
