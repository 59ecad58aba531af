"""Alembic environment: always run by ``components.stores.state.migrations`` on a connection it opened."""

from alembic import context

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("Run migrations with `sourcebound state migrate` (components.stores.state.migrations).")
context.configure(
    connection=connection,
    version_table=config.attributes["version_table"],
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
