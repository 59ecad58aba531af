"""AccessFilterBuilder: the server-side filter ANDed into every retrieval."""

import pytest

from components.builders.access_filter_builder import AccessFilterBuilder
from components.core.access_rule import AccessRule


@pytest.mark.unit
class TestAccessFilterBuilder:
    def test_init(self):
        builder = AccessFilterBuilder()
        assert builder.default_verified_only is False and builder.default_exclude_tainted is True
        with pytest.raises(ValueError):
            AccessFilterBuilder(default_verified_only="no")

    def test_to_dict(self):
        assert AccessFilterBuilder(default_verified_only=True).to_dict() == {
            "type": "components.builders.access_filter_builder.AccessFilterBuilder",
            "init_parameters": {"default_verified_only": True, "default_exclude_tainted": True},
        }

    def test_from_dict(self):
        builder = AccessFilterBuilder.from_dict(AccessFilterBuilder(default_exclude_tainted=False).to_dict())
        assert builder.default_exclude_tainted is False

    def test_run_builds_the_rule_filter(self):
        out = AccessFilterBuilder().run(tenant_id="acme", user_tags=["hr", "eng"], user_id="u1", project_id="p1")
        assert out["filters"] == AccessRule("acme", ("eng", "hr"), "u1", "p1").to_filters()
        assert out["access"]["tenant_id"] == "acme" and out["access"]["exclude_tainted"] is True

    def test_run_applies_request_options(self):
        filters = AccessFilterBuilder().run(
            tenant_id="acme", user_tags=["hr"], filters={"verified_only": True, "exclude_tainted": False}
        )["filters"]
        # Both branches (own tenant, public) carry the option.
        assert all(
            {"field": "meta.verified", "operator": "==", "value": True} in b["conditions"]
            for b in filters["conditions"]
        )
        assert not any(c.get("field") == "meta.tainted" for b in filters["conditions"] for c in b["conditions"])

    @pytest.mark.parametrize(
        "smuggled",
        [
            {"tenant_id": "globex"},
            {"field": "meta.tenant_id", "operator": "==", "value": "globex"},
            {"operator": "OR", "conditions": [{"field": "meta.tenant_id", "operator": "!=", "value": "acme"}]},
        ],
    )
    def test_run_refuses_anything_but_the_two_options(self, smuggled):
        with pytest.raises(ValueError, match="Unsupported filter option"):
            AccessFilterBuilder().run(tenant_id="acme", user_tags=["hr"], filters=smuggled)

    def test_run_without_tags_refuses(self):
        with pytest.raises(ValueError, match="user_tags"):
            AccessFilterBuilder().run(tenant_id="acme", user_tags=[])
