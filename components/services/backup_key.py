"""
The key that authenticates backups (docs/operations.md, "Backup and restore").

A backup's ``manifest.json`` lists every file with its SHA-256, so the manifest vouches for every byte, but only
if nobody can rewrite the manifest too. ``manifest.hmac`` is an HMAC-SHA256 of the manifest's exact bytes under a
key that is **not** in the backup: ``SOURCEBOUND_BACKUP_KEY`` (the key itself, at least 32 characters), else the
file ``SOURCEBOUND_BACKUP_KEY_FILE``, else ``~/.config/sourcebound/backup.key`` (``$XDG_CONFIG_HOME`` respected).
The first backup creates that file (mode 0600) when neither is set. A restore recomputes the code with the key it
finds and refuses a backup whose manifest was changed (a file added, a key added to ``api_keys.json`` and its
checksum updated, ...) or that was made with another key. Keep a copy of the key off the machine, apart from the
backups: without it no backup can be restored.

Usage:

```python
from components.services.backup_key import load_key, manifest_code

key = load_key(create=True, data_dir=Path("data"))
code = manifest_code(key, manifest_bytes)   # {"algorithm": "HMAC-SHA256", "key_id": "...", "hmac": "..."}
```
"""

import hashlib
import hmac
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.errors import SourceboundError

logger = logging.getLogger(__name__)

KEY_ENV = "SOURCEBOUND_BACKUP_KEY"
KEY_FILE_ENV = "SOURCEBOUND_BACKUP_KEY_FILE"
ALGORITHM = "HMAC-SHA256"
MIN_KEY_BYTES = 32


class BackupKeyError(SourceboundError):
    """No usable backup key, or a backup that its key does not authenticate; the message names the fix."""


@dataclass(frozen=True)
class BackupKey:
    """A backup key and where it came from (for messages; never the key itself)."""

    secret: bytes
    origin: str

    @property
    def key_id(self) -> str:
        """A short public name of the key: tells two keys apart without revealing either."""
        return hmac.new(self.secret, b"sourcebound backup key id", hashlib.sha256).hexdigest()[:16]


def default_key_file() -> Path:
    """``$XDG_CONFIG_HOME/sourcebound/backup.key`` (``~/.config`` when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    return Path(base) / "sourcebound" / "backup.key"


def key_file() -> Path:
    """The key file in use: ``SOURCEBOUND_BACKUP_KEY_FILE`` or :func:`default_key_file`."""
    configured = os.environ.get(KEY_FILE_ENV, "").strip()
    return Path(configured).expanduser() if configured else default_key_file()


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    logger.warning(
        "Created the backup key %s. Keep a copy of it off this machine, apart from the backups: restoring any "
        "backup needs it (docs/operations.md, 'Backup and restore').",
        path,
    )


def load_key(create: bool = False, data_dir: str | os.PathLike | None = None) -> BackupKey:
    """
    The backup key from ``SOURCEBOUND_BACKUP_KEY``, else its file.

    :param create: Create the key file (a random 256-bit key, mode 0600) when it does not exist.
    :param data_dir: The data directory: a key file inside it would be copied into every backup, and is refused.
    :raises BackupKeyError: No key (and ``create`` is false), a key that is too short, or a key file inside the
        data directory.
    """
    value = os.environ.get(KEY_ENV, "").strip()
    if value:
        if len(value.encode()) < MIN_KEY_BYTES:
            raise BackupKeyError(f"{KEY_ENV} is too short: use at least {MIN_KEY_BYTES} random characters.")
        return BackupKey(value.encode(), KEY_ENV)
    path = key_file()
    if data_dir is not None:
        root = Path(data_dir).resolve()
        if root == path.resolve() or root in path.resolve().parents:
            raise BackupKeyError(
                f"The backup key file {path} is inside the data directory {root}: it would be copied into every "
                f"backup and authenticate nothing. Set {KEY_FILE_ENV} to a file outside it."
            )
    if not path.exists():
        if not create:
            raise BackupKeyError(
                f"No backup key: {path} does not exist and {KEY_ENV} is not set. Restoring needs the key the backup "
                f"was made with: set {KEY_FILE_ENV} to (a copy of) that key file."
            )
        _create(path)
    try:
        secret = path.read_bytes().strip()
    except OSError as error:
        raise BackupKeyError(f"Cannot read the backup key file {path}: {error.strerror}.") from error
    if len(secret) < MIN_KEY_BYTES:
        raise BackupKeyError(f"The backup key file {path} is too short: it must hold at least {MIN_KEY_BYTES} bytes.")
    return BackupKey(secret, str(path))


def manifest_code(key: BackupKey, manifest: bytes) -> dict[str, Any]:
    """The authentication code of a manifest's exact bytes, as ``manifest.hmac`` holds it."""
    return {
        "algorithm": ALGORITHM,
        "key_id": key.key_id,
        "hmac": hmac.new(key.secret, manifest, hashlib.sha256).hexdigest(),
    }


def check_manifest_code(key: BackupKey, manifest: bytes, code: Any) -> None:
    """
    Refuse a manifest that ``code`` does not authenticate under ``key``.

    :raises BackupKeyError: Naming whether the backup was made with another key or was changed after it was made.
    """
    if not isinstance(code, dict) or code.get("algorithm") != ALGORITHM or not isinstance(code.get("hmac"), str):
        raise BackupKeyError("The backup's manifest.hmac is damaged; the backup cannot be authenticated.")
    if code.get("key_id") != key.key_id:
        raise BackupKeyError(
            f"The backup was made with another backup key (key id {code.get('key_id')!r}; this one, from "
            f"{key.origin}, is {key.key_id!r}): it cannot be authenticated. Set {KEY_FILE_ENV} to the key it was "
            "made with."
        )
    expected = hmac.new(key.secret, manifest, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, code["hmac"]):
        raise BackupKeyError(
            "The backup's manifest does not match its authentication code (manifest.hmac): the backup was changed "
            "after it was made (a file, a key or a checksum altered or added). Refusing it; nothing was restored."
        )
