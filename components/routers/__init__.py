"""Routers: file types, search modes, CITE/ROUTE by tag owner."""
