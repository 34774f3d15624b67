# kioku in a container: the wheel built from this tree, installed by scripts/install_kioku.sh
# (the same script tests/packaging/test_wheel.py runs), served by a non-root user (uid and gid
# 10001), data in a volume. Build and run, published on the host's loopback only (put a TLS
# proxy in front to share it, and set KIOKU_PUBLIC_URL to the URL clients use):
#   docker build -t kioku .
#   docker run -d --name kioku -p 127.0.0.1:8765:8765 -v kioku-data:/data kioku
#   docker exec -it kioku kioku keys create my-agent --role member   # a key for your agent
# A folder of the host instead of the volume must be writable by the uid kioku runs as (docker
# makes a missing one owned by root). Make it yourself (mkdir -m 700 data), then either hand it
# to 10001 (sudo chown 10001:10001 data) and run as above with -v "$PWD/data:/data", or run as
# yourself:
#   docker run -d --user "$(id -u):$(id -g)" -p 127.0.0.1:8765:8765 -v "$PWD/data:/data" kioku
# With PostgreSQL + pgvector: compose.yaml. What is checked where (no engine runs in the
# tests): docs/operations.md, "Containers".

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
 && groupadd --system --gid 10001 kioku \
 && useradd --system --uid 10001 --gid kioku --home-dir /data kioku \
 && mkdir -p /data && chown kioku:kioku /data && chmod 0700 /data
# HOME=/data: any uid (docker run --user) keeps the model cache in the data folder too; without
# it a uid the image does not know gets HOME=/, where it cannot write. KIOKU_PUBLIC_URL: the URL
# the port is published at in the commands above (the OAuth metadata of /mcp names it, and
# outside loopback it must be https); override it when clients reach kioku elsewhere.
ENV PATH=/opt/kioku/bin:$PATH \
    HOME=/data \
    HF_HUB_OFFLINE=1 \
    KIOKU_DATABASE_URL=sqlite:////data/kioku.db \
    KIOKU_PUBLIC_URL=http://127.0.0.1:8765
USER kioku
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/health', timeout=4)"]
# Without --dev every request needs an API key (kioku keys create); /health needs none.
CMD ["kioku", "serve", "--host", "0.0.0.0", "--port", "8765"]
