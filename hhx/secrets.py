"""Which names hold secrets, which values are secrets, and how text is cleaned of them.

One rule for the whole project (LLM error messages, config checks, MLflow params and tags):

- A *name* is secret when its last word is a credential word: `api_key`, `x-api-key`, `apiKey`,
  `access_token`, `HF_TOKEN`, `client_secret`, `password`, `Authorization`. Counting words such as
  `max_tokens`, prices (`input_cost_per_token`), tokenizer settings (`pad_token`,
  `stop_token_ids`) and names that hold the *name* of a variable (`api_key_env`) are not
  secret: they are settings worth recording.
- A *value* is secret when it is the value of an environment variable with a secret name (or a
  key passed explicitly, such as the one read from `model.api_key_env`), or looks like a key
  (`sk-...`, `Bearer ...`).

`scrub` removes secrets from the whole text before anything cuts it (`clip`), so no cut can leave
part of a key behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

REDACTED = "***"
# Last words that make a name secret; "key" only with a word before it that says which key.
_SECRET_LAST = {"token", "secret", "password", "passwd", "passphrase", "credential",
                "credentials", "authorization", "bearer", "cookie", "apikey"}
_KEY_QUALIFIERS = {"api", "secret", "private", "access", "auth", "client", "signing",
                   "encryption", "master", "service", "x"}
# "token" that counts or prices tokens, or names a tokenizer's token: not a credential.
_NOT_CREDENTIAL_TOKEN = {"per", "max", "min", "num", "n", "pad", "eos", "bos", "unk", "sep", "cls",
                         "mask", "stop", "special", "end", "start", "image", "audio"}
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
MIN_SECRET_CHARS = 8  # shorter environment values ("1", "true") are not worth redacting
# Key-shaped text, whatever variable it came from: OpenAI/Anthropic-style keys, bearer headers.
_KEY_SHAPES = re.compile(
    r"\b(sk|pk|rk|key|token|hf|ghp|gho|xox[abp])[-_][A-Za-z0-9_\-]{6,}"
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/\-]{6,}=*"
)


def name_words(name: str) -> list[str]:
    """`OPENAI_API_KEY` -> [openai, api, key]; `apiKey` -> [api, key]; `x-api-key` -> [x, api, key]."""
    return [w.lower() for w in _WORD_SPLIT.split(str(name)) if w]


def is_secret_name(name: str) -> bool:
    """True for names whose value is a credential (see the module docstring for the rule)."""
    words = name_words(name)
    if not words:
        return False
    last = words[-1]
    if last == "key":
        return len(words) == 1 or words[-2] in _KEY_QUALIFIERS
    if last == "token":
        return not (len(words) > 1 and words[-2] in _NOT_CREDENTIAL_TOKEN)
    return last in _SECRET_LAST


def secret_values(extra: Iterable[str | None] = ()) -> list[str]:
    """Values of secret-named environment variables, plus `extra`; longest first, so that a key
    that contains another is replaced whole."""
    found = {v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET_CHARS}
    found |= {v for v in extra if v and len(v) >= MIN_SECRET_CHARS}
    return sorted(found, key=len, reverse=True)


def _mask(match: re.Match[str]) -> str:
    prefix = match.group(1)
    return f"{prefix}-{REDACTED}" if prefix else f"Bearer {REDACTED}"


def scrub(text: str, secrets: Iterable[str | None] | None = None) -> str:
    """`text` with every secret value and key-shaped string replaced by ***.

    `secrets` are known keys (e.g. the one just sent); the environment's secret values are always
    included. Apply before any cut: a key split by a cut would no longer match.
    """
    return scrubber(secrets)(text)


def scrubber(secrets: Iterable[str | None] | None = None) -> Callable[[str], str]:
    """`scrub` with the secret values looked up once, for scrubbing many texts (a config's
    leaves) against the same environment."""
    values = secret_values(secrets or ())

    def scrub_one(text: str) -> str:
        text = str(text)
        for value in values:
            if value in text:
                text = text.replace(value, REDACTED)
        return _KEY_SHAPES.sub(_mask, text)

    return scrub_one


def clip(text: str, limit: int = 300) -> str:
    """One line (whitespace collapsed), at most `limit` characters. Scrub first."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def clean_line(text: str, secrets: Iterable[str | None] | None = None, limit: int = 300) -> str:
    """Scrub, then clip: the only order that never leaks part of a key."""
    return clip(scrub(text, secrets), limit)
