"""Safe-by-default helpers of the config: the Hugging Face token check the loader runs on the whole file and the
endpoint's rule on each endpoint (each problem a ``(path, message)`` pair), and the verify payload as sent."""

from __future__ import annotations

from typing import Any

from ..facts import safety

Problem = tuple[tuple[str | int, ...], str]

TOKEN_FIELD = "model.huggingface.token"


TOKEN_MESSAGE = (f"looks like a Hugging Face token (hf_...); a token here is written in clear text into the "
                 f"template and the manifests. Store it in a secret and reference it with {TOKEN_FIELD} "
                 "(secretsManagerArn or kubernetesSecret)")


def token_key_message(lines: list[int] | tuple[int, ...] = ()) -> str:
    """What a mapping with a token-shaped key is told; ``lines``: the keys' lines in the file, when known (the key
    itself is never repeated)."""
    where = f" (line {', '.join(str(n) for n in lines)})" if lines else ""
    return (f"has a key{where} that looks like a Hugging Face token (hf_...); a token here is written in clear text "
            f"into the template and the manifests. Store it in a secret and reference it with {TOKEN_FIELD} "
            "(secretsManagerArn or kubernetesSecret)")


TOKEN_KEY_MESSAGE = token_key_message()


def token_shaped(value: Any, path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Every string in ``value`` (mappings, lists and tuples walked to any depth: keys too) that looks like a Hugging
    Face token, as ``(path, message)``; the message never repeats the value (a key is named by its mapping)."""
    problems: list[Problem] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(path, value)]
    while stack:  # no recursion: the loader bounds the depth, this does not rely on it
        where, node = stack.pop()
        if isinstance(node, str):
            if safety.looks_like_hf_token(node):
                problems.append((where, TOKEN_MESSAGE))
        elif isinstance(node, dict):
            if any(isinstance(k, str) and safety.looks_like_hf_token(k) for k in node):
                problems.append((where, TOKEN_KEY_MESSAGE))
            stack += [((*where, k if isinstance(k, (str, int)) else str(k)), v) for k, v in reversed(node.items())]
        elif isinstance(node, (list, tuple)):
            stack += [((*where, i), v) for i, v in reversed(list(enumerate(node)))]
    return problems
