"""
docker-compose.yml, the Dockerfile and the Qdrant-server pipeline profile it mounts.

Images cannot be pulled here, so these tests check the compose file's structure and that the
YAML the app container runs loads. qdrant-haystack's QdrantDocumentStore connects lazily (on
first use), so a profile pipeline builds without a server; nothing here opens a connection.
"""

from pathlib import Path

import pytest
import yaml

from hayhooks_app import profiles

REPO = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES = COMPOSE["services"]


def _container_env(service: str) -> dict[str, str]:
    env = SERVICES[service].get("environment", {})
    return env if isinstance(env, dict) else dict(item.split("=", 1) for item in env)


@pytest.mark.unit
class TestComposeFile:
    def test_services(self):
        assert {"qdrant", "ollama", "ollama-pull", "app"} <= set(SERVICES)

    def test_every_long_running_service_has_a_health_check(self):
        for name in ("qdrant", "ollama", "app"):
            check = SERVICES[name]["healthcheck"]
            assert check["test"] and check["interval"] and check["retries"] >= 3, name

    def test_volumes_are_declared_and_used(self):
        declared = set(COMPOSE["volumes"])
        used = {
            volume.split(":", 1)[0]
            for service in SERVICES.values()
            for volume in service.get("volumes", [])
            if not volume.startswith((".", "/"))
        }
        assert used <= declared
        assert any(v.endswith(":/qdrant/storage") for v in SERVICES["qdrant"]["volumes"])
        assert any(v.endswith(":/root/.ollama") for v in SERVICES["ollama"]["volumes"])
        # Each replica its own /data (caches only; the state is in postgres), so `--scale app=N` shares none.
        assert "/data" in SERVICES["app"]["volumes"]
        assert any(v.endswith(":/var/lib/postgresql/data") for v in SERVICES["postgres"]["volumes"])

    def test_ports(self):
        assert any(port.endswith("6333:6333") for port in SERVICES["qdrant"]["ports"])
        assert any(port.endswith("11434:11434") for port in SERVICES["ollama"]["ports"])
        # The proxy publishes the API; the replicas publish nothing (several cannot bind one host port).
        assert any(port.endswith(":8080") and "1416" in port for port in SERVICES["proxy"]["ports"])
        assert "ports" not in SERVICES["app"] and SERVICES["app"]["expose"] == ["1416"]

    def test_replicas_share_postgres_behind_the_proxy(self):
        postgres = SERVICES["postgres"]
        assert postgres["image"].startswith("postgres:") and postgres["healthcheck"]["test"][:2] == [
            "CMD",
            "pg_isready",
        ]
        for service in ("app", "events"):
            env = _container_env(service)
            assert env["SOURCEBOUND_DATABASE_URL"].startswith("postgresql+psycopg://sourcebound:")
            assert env["SOURCEBOUND_DATABASE_URL"].endswith("@postgres:5432/sourcebound")
            assert SERVICES[service]["depends_on"]["postgres"]["condition"] == "service_healthy"
        proxy = SERVICES["proxy"]
        (mount,) = proxy["volumes"]
        source, target, mode = mount.split(":")
        caddyfile = (REPO / source).read_text(encoding="utf-8")
        assert proxy["image"].startswith("caddy:") and target == "/etc/caddy/Caddyfile" and mode == "ro"
        assert "dynamic a app 1416" in caddyfile and "health_uri /health" in caddyfile

    def test_model_pull_is_one_shot_and_gates_the_app(self):
        pull = SERVICES["ollama-pull"]
        assert pull["entrypoint"][:2] == ["ollama", "pull"] and "CHAT_MODEL" in pull["entrypoint"][2]
        assert pull["restart"] == "no"
        assert pull["depends_on"]["ollama"]["condition"] == "service_healthy"
        assert SERVICES["app"]["depends_on"]["ollama-pull"]["condition"] == "service_completed_successfully"
        assert SERVICES["app"]["depends_on"]["qdrant"]["condition"] == "service_healthy"

    def test_app_is_built_here_and_points_at_the_servers(self):
        app = SERVICES["app"]
        assert app["build"] == "."
        assert (REPO / "Dockerfile").is_file()
        env = _container_env("app")
        assert env["QDRANT_URL"] == "http://qdrant:6333"
        assert env["OLLAMA_BASE_URL"] == "http://ollama:11434"
        assert env["SOURCEBOUND_RAG_PIPELINE"] == "query_ollama"
        assert env["HAYHOOKS_HOST"] == "0.0.0.0"
        assert "api_key" in env["SOURCEBOUND_AUTH_MODE"]
        assert "SOURCEBOUND_ALLOWED_HOSTS" in env  # the names clients use, passed through (default: loopback only)

    def test_the_image_defaults_to_api_key_mode(self):
        # It listens on 0.0.0.0: run without compose, the key still decides who is asking (trusted is an opt-in).
        dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
        env_block = dockerfile[dockerfile.index("ENV HAYHOOKS_HOST=0.0.0.0") :].split("\n\n")[0]
        assert "SOURCEBOUND_AUTH_MODE=api_key" in env_block

    def test_the_proxy_probes_health_by_an_allowed_host(self):
        caddyfile = (REPO / "deploy" / "Caddyfile").read_text(encoding="utf-8")
        assert "health_headers" in caddyfile and "Host localhost" in caddyfile

    def test_jaeger_receives_the_apps_traces(self):
        jaeger = SERVICES["jaeger"]
        assert jaeger["image"].startswith("jaegertracing/all-in-one:")
        assert jaeger["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
        assert "127.0.0.1:16686:16686" in jaeger["ports"]  # the UI, on loopback only
        env = _container_env("app")
        # OTLP/HTTP on Jaeger's port 4318 (the exporter appends /v1/traces), unless the operator overrides it.
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "${OTEL_EXPORTER_OTLP_ENDPOINT-http://jaeger:4318}"
        assert "sourcebound" in env["OTEL_SERVICE_NAME"]
        assert env["HAYSTACK_CONTENT_TRACING_ENABLED"].endswith(":-false}")  # no content unless switched on
        assert SERVICES["app"]["depends_on"]["jaeger"]["condition"] == "service_started"

    def test_app_can_read_a_sources_file_and_its_secrets(self):
        env = _container_env("app")
        assert env["SOURCEBOUND_SOURCES"] == "${SOURCEBOUND_SOURCES:-}"  # empty by default: no sources
        (mount,) = [v for v in SERVICES["app"]["volumes"] if v.startswith("./deploy")]
        source, target, mode = mount.split(":")
        assert (REPO / source).is_dir() and target == "/app/deploy" and mode == "ro"
        # Secrets stay out of the compose file and the sources file: an optional env file beside it.
        assert SERVICES["app"]["env_file"] == [{"path": "./deploy/sources.env", "required": False}]
        assert "deploy/sources.env" in (REPO / ".gitignore").read_text(encoding="utf-8")

    def test_app_mounts_the_server_profile(self):
        env = _container_env("app")
        (mount,) = [v for v in SERVICES["app"]["volumes"] if v.startswith("./pipelines/profiles/server")]
        source, target, mode = mount.split(":")
        assert (REPO / source).is_dir() and target == env["SOURCEBOUND_PIPELINES_DIR"] and mode == "ro"

    def test_dockerfile_serves_the_app(self):
        text = (REPO / "Dockerfile").read_text(encoding="utf-8")
        assert "python:3.11" in text and "download.pytorch.org/whl/cpu" in text
        assert 'CMD ["python", "-m", "hayhooks_app", "serve"]' in text
        assert "HEALTHCHECK" in text and "/health" in text


@pytest.mark.unit
class TestServerProfile:
    def test_generated_files_are_up_to_date(self):
        assert profiles.stale_profiles() == [], "run `python -m hayhooks_app.profiles` to regenerate"

    def test_no_edge_store_left(self):
        for name in profiles.sources():
            text = (profiles.SERVER_PROFILE_DIR / f"{name}.yml").read_text(encoding="utf-8")
            assert "QdrantEdgeDocumentStore" not in text and profiles.SERVER_STORE in text, name

    def test_hybrid_retriever_gets_a_bm25_query_vector(self):
        data = profiles.to_server_profile(yaml.safe_load((profiles.PIPELINES_DIR / "query.yml").read_text()))
        assert data["components"]["retriever"]["type"].endswith("QdrantHybridRetriever")
        assert data["components"]["retriever_bm25"]["type"] == profiles.BM25_TEXT
        receivers = {c["receiver"]: c["sender"] for c in data["connections"]}
        assert receivers["retriever.query_sparse_embedding"] == "retriever_bm25.sparse_embedding"
        # The glossary-expanded keyword query is what the BM25 query vector is computed from.
        assert "retriever.query" not in receivers and receivers["retriever_bm25.text"] == "expander.keyword_query"

    def test_hybrid_fuses_like_the_edge_retriever_and_the_store_takes_the_test_location(self):
        from components.document_stores.qdrant_edge.document_store import DEFAULT_RRF_K

        data = profiles.to_server_profile(yaml.safe_load((profiles.PIPELINES_DIR / "search.yml").read_text()))
        hybrid = data["components"]["hybrid_retriever"]["init_parameters"]
        assert hybrid["rrf_k"] == DEFAULT_RRF_K
        store = hybrid["document_store"]["init_parameters"]
        assert store["local_location"] == "${SOURCEBOUND_QDRANT_LOCATION:-}"
        assert store["url"] == "${QDRANT_URL:-http://localhost:6333}"
        assert {"field_name": "id", "field_schema": "keyword"} in store["payload_fields_to_index"]

    def test_writer_gets_bm25_document_vectors(self):
        # indexing.yml computes its own BM25 vectors (contextual header + text): the profile keeps that step.
        data = profiles.to_server_profile(yaml.safe_load((profiles.PIPELINES_DIR / "indexing.yml").read_text()))
        receivers = {c["receiver"]: c["sender"] for c in data["connections"]}
        assert receivers["writer.documents"] == "bm25.documents"
        assert data["components"]["bm25"]["type"] == profiles.BM25_DOCUMENTS
        assert data["components"]["bm25"]["init_parameters"]["meta_fields_to_embed"] == ["context_header"]
        assert "writer_bm25" not in data["components"]

    def test_a_writer_without_bm25_step_gets_one(self):
        source = yaml.safe_load((profiles.PIPELINES_DIR / "indexing.yml").read_text())
        del source["components"]["bm25"]
        source["connections"] = [c for c in source["connections"] if "bm25" not in (c["sender"] + c["receiver"])]
        source["connections"].append({"sender": "sentence_vectors.documents", "receiver": "writer.documents"})
        data = profiles.to_server_profile(source)
        receivers = {c["receiver"]: c["sender"] for c in data["connections"]}
        assert receivers["writer.documents"] == "writer_bm25.documents"
        assert data["components"]["writer_bm25"]["type"] == profiles.BM25_DOCUMENTS


@pytest.mark.integration
class TestServerProfileLoads:
    @pytest.mark.parametrize("name", ["indexing", "search", "query", "query_ollama", "enrich"])
    def test_profile_pipeline_builds_without_a_server(self, name, tmp_path, no_network):
        from components.services.pipeline_loader import load_pipeline

        env = {
            "QDRANT_URL": "http://qdrant:6333",
            "SOURCEBOUND_DATA_DIR": str(tmp_path),
            "OLLAMA_BASE_URL": "http://ollama:11434",
        }
        pipeline = load_pipeline(profiles.SERVER_PROFILE_DIR / f"{name}.yml", env=env)
        stores = {
            type(getattr(c, attribute)).__name__
            for _, c in pipeline.walk()
            for attribute in ("document_store", "_document_store")
            if hasattr(c, attribute)
        }
        assert stores == {"TenantQdrantDocumentStore"}

    def test_services_accept_the_profile(self, tmp_path, no_network):
        """The app's services build on the server profile (declared inputs and component roles all resolve)."""
        from components.services.enrichment_service import EnrichmentService
        from components.services.indexing_service import IndexingService
        from components.services.pipeline_loader import load_pipeline
        from components.services.query_service import QueryService

        env = {"QDRANT_URL": "http://qdrant:6333", "SOURCEBOUND_DATA_DIR": str(tmp_path)}
        folder = profiles.SERVER_PROFILE_DIR
        QueryService(load_pipeline(folder / "query_ollama.yml", env=env), load_pipeline(folder / "search.yml", env=env))
        IndexingService(load_pipeline(folder / "indexing.yml", env=env))
        EnrichmentService(load_pipeline(folder / "enrich.yml", env=env))
