"""The agent's errors: each carries the process's exit code (see ``cli``)."""

from __future__ import annotations


class AgentError(Exception):
    exit_code = 1


class InsufficientSpace(AgentError):
    exit_code = 4


class VerificationFailed(AgentError):
    exit_code = 5
