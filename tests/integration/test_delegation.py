"""
Delegation is an explicit grant (docs/contract.md "Delegation"): user keys act only as their own
user, service keys (``act_as_users``) act for the users their grant matches, and a key with
neither passes no ``user_id`` at all (403) and sees only tenant-wide documents. Keys files
written before grants existed keep loading, their user-less keys without a grant.
"""

import json
import sqlite3

import pytest
from support.api_server import ApiServer, error_of, settled_query_log

from components.stores import key_store
from components.stores.key_store import ApiKeyRecord, ApiKeyStore, hash_key
from hayhooks_app.cli import keys as cli_keys
from hayhooks_app.errors import ApiError
from hayhooks_app.identity import authorize_write, resolve_identity


def _bearer(key):
    return {"authorization": f"Bearer {key}"}


@pytest.fixture
def keys_file(tmp_path):
    return tmp_path / "keys.json"


@pytest.fixture
def keys(keys_file):
    grants = {
        "user": {"user_id": "u-acme-priya"},
        "service": {"act_as_users": ["*"]},
        "limited": {"act_as_users": ["u-acme-*", "svc-bot"]},
        "plain": {},
    }
    return {
        name: key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], **grant)[0]
        for name, grant in grants.items()
    }


def _identity(keys_file, key, **body):
    return resolve_identity("api_key", ApiKeyStore(keys_file), _bearer(key), tenant_id=None, user_tags=None, **body)


@pytest.mark.unit
class TestApiKeyRecord:
    def test_kinds(self, keys_file, keys):
        store = ApiKeyStore(keys_file)
        assert {name: store.lookup(key).kind for name, key in keys.items()} == {
            "user": "user", "service": "service", "limited": "service", "plain": "tenant",
        }  # fmt: skip

    def test_grant_patterns(self):
        record = ApiKeyRecord.from_dict(
            {"sha256": "0" * 64, "tenant_id": "acme", "act_as_users": ["u-acme-*", "svc-bot"]}
        )
        assert record.may_act_as("u-acme-priya") and record.may_act_as("svc-bot")
        assert (
            not record.may_act_as("u-globex-ann")
            and not record.may_act_as("svc-bot2")
            and not record.may_act_as("U-ACME-X")
        )

    def test_user_and_grant_together_are_rejected(self, keys_file):
        with pytest.raises(ValueError, match="either a user key"):
            key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], user_id="u", act_as_users=["*"])

    @pytest.mark.parametrize("grant", [[], "u-*", [""], [3]])
    def test_malformed_grant_is_rejected(self, grant):
        with pytest.raises(ValueError, match="act_as_users"):
            ApiKeyRecord.from_dict({"sha256": "0" * 64, "tenant_id": "acme", "act_as_users": grant})

    def test_round_trip(self):
        record = ApiKeyRecord.from_dict(
            {"sha256": "0" * 64, "tenant_id": "acme", "tags": ["hr"], "act_as_users": ["u-*"]}
        )
        assert ApiKeyRecord.from_dict(record.to_dict()) == record

    def test_old_keys_file_loads_as_keys_without_a_grant(self, keys_file):
        # The keys file as written before grants existed: no act_as_users field at all.
        entries = [
            {"sha256": hash_key("old-plain"), "tenant_id": "acme", "user_id": None, "tags": ["hr"], "projects": None,
             "permissions": ["read"], "label": "old"},
            {"sha256": hash_key("old-user"), "tenant_id": "acme", "user_id": "u-acme-priya", "tags": ["hr"],
             "projects": None, "permissions": ["read"], "label": ""},
        ]  # fmt: skip
        keys_file.write_text(json.dumps({"keys": entries}))
        store = ApiKeyStore(keys_file)
        assert store.lookup("old-plain").kind == "tenant" and store.lookup("old-user").kind == "user"
        assert _identity(keys_file, "old-plain").user_id is None
        with pytest.raises(ApiError) as error:
            _identity(keys_file, "old-plain", user_id="u-acme-priya")
        assert error.value.status_code == 403 and "act_as_users" in error.value.message


@pytest.mark.unit
class TestResolveIdentity:
    def test_user_key_acts_only_as_its_user(self, keys_file, keys):
        assert _identity(keys_file, keys["user"]).user_id == "u-acme-priya"
        assert _identity(keys_file, keys["user"], user_id="u-acme-priya").delegated is False
        with pytest.raises(ApiError) as error:
            _identity(keys_file, keys["user"], user_id="u-acme-maria")
        assert error.value.status_code == 403 and "user key acts only as its own user" in error.value.message

    def test_service_key_acts_for_granted_users(self, keys_file, keys):
        identity = _identity(keys_file, keys["service"], user_id="u-acme-maria")
        assert identity.user_id == "u-acme-maria" and identity.delegated and identity.key_id.startswith("key-")
        assert _identity(keys_file, keys["limited"], user_id="svc-bot").user_id == "svc-bot"
        with pytest.raises(ApiError) as error:
            _identity(keys_file, keys["limited"], user_id="u-globex-ann")
        assert error.value.status_code == 403 and "outside this service key's act_as_users grant" in error.value.message

    def test_service_key_without_user_id_is_tenant_wide(self, keys_file, keys):
        identity = _identity(keys_file, keys["service"])
        assert identity.user_id is None and identity.delegated is False and identity.scope == "tenant"

    def test_key_without_grant_cannot_pass_user_id(self, keys_file, keys):
        assert _identity(keys_file, keys["plain"]).user_id is None
        with pytest.raises(ApiError) as error:
            _identity(keys_file, keys["plain"], user_id="u-acme-priya")
        assert error.value.status_code == 403
        assert "keys add --user" in error.value.message and "keys add --act-as-users" in error.value.message

    def test_writes_into_a_users_space_need_the_grant(self, keys_file):
        writer, _ = key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], permissions=["write"])
        owner, _ = key_store.register_key(
            keys_file, tenant_id="acme", tags=["hr"], permissions=["write"], user_id="u-a"
        )
        store = ApiKeyStore(keys_file)
        for key, user in ((writer, "u-a"), (owner, "u-b")):
            with pytest.raises(ApiError) as error:
                authorize_write("api_key", store, _bearer(key), tenant_ids={"acme"}, tags={"hr"}, user_ids={user})
            assert error.value.status_code == 403
        assert authorize_write("api_key", store, _bearer(owner), tenant_ids={"acme"}, tags={"hr"}, user_ids={"u-a"})
        assert authorize_write("api_key", store, _bearer(writer), tenant_ids={"acme"}, tags={"hr"}, user_ids=set())


@pytest.mark.unit
class TestCli:
    def test_add_service_key_and_list(self, keys_file, capsys):
        base = ["--keys-file", str(keys_file), "add", "--tenant", "acme", "--tags", "hr"]
        assert cli_keys.main([*base, "--act-as-users"]) == 0
        assert cli_keys.main([*base, "--act-as-users", "u-acme-*,svc-bot"]) == 0
        assert cli_keys.main([*base, "--user", "u", "--act-as-users"]) == 2
        assert "either a user key" in capsys.readouterr().err
        grants = [record.act_as_users for record in key_store.list_keys(keys_file)]
        assert grants == [("*",), ("u-acme-*", "svc-bot")]
        assert cli_keys.main(["--keys-file", str(keys_file), "list"]) == 0
        assert "act_as_users=u-acme-*,svc-bot" in capsys.readouterr().out


PRIVATE = "Priya's private salary review notes: the raise is agreed for March."
SHARED = "The hr team meets every Monday morning in room 4."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("delegation") / "data"
    keys_file = data_dir / "api_keys.json"
    data_dir.mkdir(parents=True)
    grants = {
        "indexer": {"act_as_users": ["*"], "permissions": ["read", "write"]},
        "priya": {"user_id": "u-acme-priya"},
        "orchestrator": {"act_as_users": ["u-acme-*"]},
        "plain": {},
        "writer": {"permissions": ["read", "write"]},
    }
    keys = {
        name: key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], **grant)[0]
        for name, grant in grants.items()
    }
    # Identity, not relevance, is under test: every visible document must come back, however unrelated to the query
    # (the search's minimum similarity, docs/contract.md "Retrieval quality controls", is turned off here).
    env = {
        "SOURCEBOUND_AUTH_MODE": "api_key",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "RAG_SEARCH_MIN_SIMILARITY": "-1",
    }
    with ApiServer(data_dir, env=env) as running:
        documents = [
            {
                "content": PRIVATE,
                "tenant_id": "acme",
                "tags": ["hr"],
                "document_id": "priya-notes",
                "scope": "user",
                "user_id": "u-acme-priya",
            },
            {"content": SHARED, "tenant_id": "acme", "tags": ["hr"], "document_id": "hr-meetings"},
        ]
        response = running.client.post("/index/run", json={"documents": documents}, headers=_bearer(keys["indexer"]))
        assert response.status_code == 200, response.text
        running.keys = keys
        yield running


def _found(server, key, **body):
    response = server.client.post(
        "/search/run", json={"query": "salary review raise", "k": 5, **body}, headers=_bearer(key)
    )
    return response


@pytest.mark.integration
@pytest.mark.slow
class TestDelegationOverHttp:
    def test_user_key_sees_its_private_document(self, server):
        ids = {hit["document_id"] for hit in _found(server, server.keys["priya"]).json()["result"]["results"]}
        assert ids == {"priya-notes", "hr-meetings"}

    def test_key_without_grant_is_403_and_sees_only_tenant_documents(self, server):
        message = error_of(_found(server, server.keys["plain"], user_id="u-acme-priya"), 403, "forbidden")
        assert "act_as_users" in message and PRIVATE not in message
        ids = {hit["document_id"] for hit in _found(server, server.keys["plain"]).json()["result"]["results"]}
        assert ids == {"hr-meetings"}

    def test_service_key_acts_for_a_granted_user_and_is_recorded(self, server):
        response = _found(server, server.keys["orchestrator"], user_id="u-acme-priya")
        assert {hit["document_id"] for hit in response.json()["result"]["results"]} == {"priya-notes", "hr-meetings"}
        settled_query_log(server.data_dir)
        with sqlite3.connect(server.data_dir / "records.sqlite") as connection:
            key_id, user_id = connection.execute(
                "SELECT key_id, user_id FROM query_log ORDER BY id DESC LIMIT 1"
            ).fetchone()
        assert key_id == ApiKeyStore(server.data_dir / "api_keys.json").lookup(server.keys["orchestrator"]).key_id
        assert user_id == "u-acme-priya"

    def test_service_key_outside_its_grant_is_403(self, server):
        error_of(_found(server, server.keys["orchestrator"], user_id="ops-bot"), 403, "forbidden")

    def test_user_key_cannot_act_as_another_user(self, server):
        error_of(_found(server, server.keys["priya"], user_id="u-acme-maria"), 403, "forbidden")

    def test_index_into_another_users_space_needs_the_grant(self, server):
        document = {"content": "x y z", "tenant_id": "acme", "tags": ["hr"], "scope": "user", "user_id": "u-acme-maria"}
        response = server.client.post(
            "/index/run", json={"documents": [document]}, headers=_bearer(server.keys["writer"])
        )
        assert "act_as_users" in error_of(response, 403, "forbidden")
