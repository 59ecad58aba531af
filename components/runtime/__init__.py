"""
The process set-up layer: what touches the environment, files or the process on behalf of everything above it.

- ``offline``: points the libraries at packaged model and tokenizer files, switches off hub look-ups and
  telemetry (entry points call :func:`components.runtime.offline.configure_offline`).
- ``environment``: the typed reading of environment variables (numbers, choices, booleans) whose errors
  name the variable.

It imports only ``components.core``; importing it has no side effects.
"""
