"""
What the domain allowlist now excludes from the index: ``sourcebound allowlist [--remove] [--domains LIST]``.

```bash
sourcebound allowlist                 # count the indexed documents outside RAG_ALLOWLIST_DOMAINS (per host)
sourcebound allowlist --remove        # and remove them
```

After ``RAG_ALLOWLIST_DOMAINS`` is tightened, the pipelines already drop those documents from results and citations
(``components.filters.domain_allowlist_filter``); this command reports them and removes them from the index
(``components.services.allowlist_audit``). Beside a running server it runs in it, with the server's allowlist.

Exit codes: 0 done (nothing excluded, or removed); 1 documents are excluded and were not removed; 2 invalid input.
"""

import argparse
import os

from hayhooks_app.cli.common import EXIT_FAILED, EXIT_OK, common_options, open_store, print_result, run_guarded


def _allowlist(args: argparse.Namespace) -> int:
    def action() -> int:
        from components.services.allowlist_audit import excluded_documents, remove_excluded
        from components.services.document_lifecycle import invalidate

        domains = args.domains if args.domains is not None else os.environ.get("RAG_ALLOWLIST_DOMAINS", "")
        store = open_store(args.pipeline)
        report = excluded_documents(store, domains)
        count = len(report["documents"])
        if not report["allowed_domains"]:
            text = "RAG_ALLOWLIST_DOMAINS is empty: every domain is allowed, nothing is excluded"
        else:
            text = (
                f"{count} indexed document(s) ({report['chunks']} chunks) are outside the allowlist "
                f"({', '.join(report['allowed_domains'])})"
            )
            text += "".join(f"\n  {host}: {documents}" for host, documents in report["hosts"].items())
        if args.remove and count:
            # Inside a server this command holds its write lock (hayhooks_app.cli.server_link, MUTATING_COMMANDS).
            removed = remove_excluded(report, lambda tenant, ids, reason: invalidate(store, tenant, ids, reason))
            report["removed"] = removed
            text += f"\nremoved {removed['documents']} document(s), {removed['chunks_removed']} chunk(s)"
        elif count:
            text += "\nrun `sourcebound allowlist --remove` to remove them"
        print_result(args, report, text)
        return EXIT_FAILED if count and not args.remove else EXIT_OK

    return run_guarded(args, action)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``allowlist [--remove] [--domains LIST]``."""
    parser = subparsers.add_parser(
        "allowlist", parents=[common_options()],
        help="count (and --remove) indexed documents outside RAG_ALLOWLIST_DOMAINS",
    )  # fmt: skip
    parser.add_argument("--remove", action="store_true", help="remove them from the index")
    parser.add_argument("--domains", help="the allowlist to check (default: RAG_ALLOWLIST_DOMAINS)")
    parser.set_defaults(func=_allowlist)
    return parser
