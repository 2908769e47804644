"""The error hierarchy. Every user-facing failure is a CoderError with an exit code; frontends print
its message (one paragraph, no traceback) and exit with `exit_code`."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CoderError(Exception):
    """Base of all errors meant for the user."""

    exit_code: int = EXIT_FAILED


class UsageError(CoderError):
    """Bad flags, arguments or input files."""

    exit_code = EXIT_USAGE


class ConfigError(CoderError):
    """Broken configuration: names the file and the key."""

    exit_code = EXIT_USAGE


class PromptError(ConfigError):
    """A prompt template and its caller disagree on the variables (coder/base/resources.py): a bug in coder or in an
    edited prompt, reported when the template is loaded rather than sent half-filled to the model."""


class ModelError(CoderError):
    """The model API failed for good (after retries) or answered nonsense."""

    exit_code = EXIT_FAILED


class ModelRejected(ModelError):
    """The API refused the configuration itself (a bad key, an unknown model): retrying cannot help."""

    exit_code = EXIT_USAGE


class ModelConfigError(ConfigError):
    """No key, unknown provider prefix, unreadable script."""


class ContextOverflowError(ModelError):
    """The provider said the request does not fit the model's window."""


class SandboxUnavailable(CoderError):
    """Bubblewrap missing or unable to create namespaces; `coder doctor` says how to fix it."""

    exit_code = EXIT_USAGE


class ShellError(CoderError):
    """The sandbox's persistent shell could not be started or restarted. A CoderError (not a bare Exception) so a
    frontend that meets one outside the `bash` tool prints a message and exits with a code, never a traceback;
    the `bash` tool itself turns it into an error result the model reads."""

    exit_code = EXIT_FAILED


class ToolError(CoderError):
    """Raised inside a tool; the engine turns it into an error result the model reads."""


class Interrupted(CoderError):
    """The user interrupted (SIGINT, Esc)."""

    exit_code = EXIT_INTERRUPTED
